import {
  roomNameProblem,
  SIGNAL_MAX_BYTES,
  type SocketErrorCode,
  type StreamLeaveFrame,
  type StreamPresentFrame,
  type StreamSignalFrame,
  type StreamWatchFrame,
} from '@realtime/protocol';
import { refreshApp } from '../apps/page-app.js';
import { acceptedSecrets } from '../apps/secret-rotation.js';
import { iceUser } from '../calls/ice.js';
import type { StreamMember } from '../engines/types.js';
import type { Connection } from '../gateway/connection.js';
import type { GatewayDeps } from '../gateway/context.js';
import { FrameError, frame, frameData, type PageModule, stored } from '../gateway/frame-registry.js';
import { TokenError, verifyStreamGrant } from '../gateway/tokens.js';
import { readUnitSignal, unitRefusal } from '../units/unit-signal.js';
import { STREAMS_PER_PAGE } from './options.js';
import type { StreamService } from './stream-service.js';

function refused(code: SocketErrorCode, message: string, ref: number | undefined, stream: string): FrameError {
  return new FrameError(code, message, ref, { stream });
}

/** Live streams: present or watch by a stream grant, leave, and signals to the stream's forwarding unit. */
export function streamModule(deps: GatewayDeps, streams: StreamService): PageModule {
  const enter = async (conn: Connection, f: StreamPresentFrame | StreamWatchFrame, role: StreamMember['role']) => {
    const problem = roomNameProblem(f.stream);
    if (problem) throw refused('bad_frame', `${f.t}: ${problem.replace('room name', 'stream name')}`, f.ref, f.stream);
    const app = await refreshApp(deps, conn);
    if (!app) return;
    if (!app.features.includes('streams')) {
      throw refused('not_included', "the app's plan does not include live streams", f.ref, f.stream);
    }
    let claims: Awaited<ReturnType<typeof verifyStreamGrant>>;
    try {
      const now = deps.now();
      claims = await verifyStreamGrant(f.grant, acceptedSecrets(app, now), now);
    } catch (error) {
      if (error instanceof TokenError) throw refused(error.code, error.message, f.ref, f.stream);
      throw error;
    }
    if (claims.stream !== f.stream) {
      throw refused('wrong_stream', 'the stream grant was issued for another stream', f.ref, f.stream);
    }
    if (claims.role !== role) {
      throw refused('wrong_stream', `the stream grant is a ${claims.role}'s, not a ${role}'s`, f.ref, f.stream);
    }
    if (claims.sub !== undefined && claims.sub !== conn.user) {
      throw refused('wrong_user', 'the stream grant was issued to another user', f.ref, f.stream);
    }
    if (streams.roleOf(conn.id, app.key, f.stream) !== undefined) {
      throw refused('bad_frame', `${f.t}: this page is on that stream already`, f.ref, f.stream);
    }
    if (streams.streamsOf(conn.id) >= STREAMS_PER_PAGE) {
      throw refused('stream_full', `a page is on at most ${STREAMS_PER_PAGE} streams at once`, f.ref, f.stream);
    }
    // A grant without `sub` is a visitor's, never reported, even on a signed-in page.
    const member: StreamMember = { page: conn.id, role };
    if (claims.sub !== undefined) member.user = claims.sub;
    const joined = await stored(() => streams.join(app.key, f.stream, member), f.ref, { stream: f.stream });
    if (joined === 'already')
      throw refused('bad_frame', `${f.t}: this page is on that stream already`, f.ref, f.stream);
    if (joined === 'taken') throw refused('stream_taken', 'the stream has a presenter already', f.ref, f.stream);
    if (joined === 'full') throw refused('stream_full', 'the stream has as many pages as it takes', f.ref, f.stream);
    return { ...joined, ice: streams.ice(iceUser(claims.sub ?? null, conn.id)) };
  };

  return {
    frames: {
      'stream.present': frame<StreamPresentFrame>(
        { required: { ref: 'ref', stream: 'string', grant: 'string' } },
        async (conn, f) => {
          const entered = await enter(conn, f, 'presenter');
          if (entered) conn.send({ t: 'stream.presenting', ref: f.ref, stream: f.stream, ice: entered.ice });
        },
      ),
      'stream.watch': frame<StreamWatchFrame>(
        { required: { ref: 'ref', stream: 'string', grant: 'string' } },
        async (conn, f) => {
          const entered = await enter(conn, f, 'viewer');
          if (entered) {
            const answer: Record<string, unknown> = {
              t: 'stream.watching',
              ref: f.ref,
              stream: f.stream,
              live: entered.live,
            };
            if (entered.startedAt !== undefined) answer.started_at = entered.startedAt;
            answer.ice = entered.ice;
            conn.send(answer);
          }
        },
      ),
      'stream.leave': frame<StreamLeaveFrame>({ required: { ref: 'ref', stream: 'string' } }, async (conn, f) => {
        const left = await stored(() => streams.leave(conn.app.key, f.stream, conn.id), f.ref, { stream: f.stream });
        if (!left) throw refused('not_in_stream', 'this page is not on that stream', f.ref, f.stream);
        conn.send({ t: 'stream.left', ref: f.ref, stream: f.stream });
      }),
      'stream.signal': frame<StreamSignalFrame>({ required: { stream: 'string', data: 'object' } }, async (conn, f) => {
        if (Buffer.byteLength(frameData(f.t, f.data, undefined, { stream: f.stream })) > SIGNAL_MAX_BYTES) {
          throw refused('too_large', `a signal's data is at most ${SIGNAL_MAX_BYTES} bytes`, undefined, f.stream);
        }
        const role = streams.roleOf(conn.id, conn.app.key, f.stream);
        if (role === undefined) throw refused('not_in_stream', 'this page is not on that stream', undefined, f.stream);
        const signal = readUnitSignal(f.data, role === 'presenter', `a ${role}`);
        if (typeof signal === 'string') throw refused('bad_frame', `stream.signal: ${signal}`, undefined, f.stream);
        try {
          await stored(() => streams.signal(conn.app.key, f.stream, conn.id, role, signal), undefined, {
            stream: f.stream,
          });
        } catch (error) {
          if (error instanceof FrameError) throw error;
          const refusal = unitRefusal(error);
          if (refusal.operator)
            deps.log.error({ err: error, page: conn.id }, 'a forwarding unit could not start a session');
          else deps.log.warn({ err: error, page: conn.id }, 'a stream signal was refused by the forwarding unit');
          throw refused(refusal.code, `stream.signal: ${refusal.message}`, undefined, f.stream);
        }
      }),
    },
    closed: (conn: Connection) => streams.pageClosed(conn.app.key, conn.id),
  };
}
