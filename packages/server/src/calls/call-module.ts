import {
  type CallAcceptFrame,
  type CallHangupFrame,
  type CallInviteFrame,
  type CallRejectFrame,
  type CallSignalFrame,
  SIGNAL_MAX_BYTES,
} from '@realtime/protocol';
import { refreshApp } from '../apps/page-app.js';
import { acceptedSecrets } from '../apps/secret-rotation.js';
import type { Connection } from '../gateway/connection.js';
import type { GatewayDeps } from '../gateway/context.js';
import { FrameError, frame, frameData, type PageModule, stored } from '../gateway/frame-registry.js';
import { TokenError, verifyCallToken } from '../gateway/tokens.js';
import type { CallService } from './call-service.js';
import { inviteRefusalMessage } from './invite-limits.js';

function noCall(ref: number | undefined, call: string): FrameError {
  return new FrameError('no_call', 'no such call for this page: it ended, or it is not this page’s', ref, { call });
}

/** The page's user, once the app's plan and the page's identity allow calls. */
async function caller(deps: GatewayDeps, conn: Connection, ref: number | undefined, call?: string): Promise<string> {
  const app = await refreshApp(deps, conn);
  if (!app) throw new FrameError('not_included', 'the app is gone', ref, { call });
  if (!app.features.includes('calls')) {
    throw new FrameError('not_included', "the app's plan does not include calls", ref, { call });
  }
  if (conn.user === null) {
    throw new FrameError('wrong_user', 'calls need a page signed in as a user (an identity)', ref, { call });
  }
  return conn.user;
}

/** Calls between two people: invite, accept, reject, hang up, and the signals between the two pages. */
export function callModule(deps: GatewayDeps, calls: CallService): PageModule {
  const page = (conn: Connection) => ({ id: conn.id, user: conn.user, send: (f: object) => conn.send(f) });
  return {
    frames: {
      'call.invite': frame<CallInviteFrame>(
        { required: { ref: 'ref', to: 'string', token: 'string' } },
        async (conn, f) => {
          const user = await caller(deps, conn, f.ref);
          let claims: Awaited<ReturnType<typeof verifyCallToken>>;
          try {
            const now = deps.now();
            claims = await verifyCallToken(f.token, acceptedSecrets(conn.app, now), now);
          } catch (error) {
            if (error instanceof TokenError) throw new FrameError(error.code, error.message, f.ref);
            throw error;
          }
          if (claims.sub !== user) {
            throw new FrameError('wrong_user', 'the call token was issued to another user', f.ref);
          }
          if (claims.call === undefined) {
            throw new FrameError('wrong_call', 'the call token is for a group call, not a call to one person', f.ref);
          }
          if (claims.call.to !== f.to) {
            throw new FrameError('wrong_call', 'the call token was issued for a call to another user', f.ref);
          }
          const placed = await stored(
            () => calls.place(conn.app.key, { ...page(conn), user }, f.to, [...claims.media], claims.call?.name),
            f.ref,
            {},
          );
          if (placed.outcome === 'limited')
            throw new FrameError('rate_limited', inviteRefusalMessage(placed, f.to), f.ref);
          const { id, outcome } = placed;
          if (outcome === 'in_call') {
            throw new FrameError('in_call', 'this user is in a call already: hang it up first', f.ref);
          }
          conn.send({ t: 'call.placed', ref: f.ref, call: id, ice: calls.ice(user) });
          if (outcome === 'busy') conn.send({ t: 'call.ended', call: id, reason: 'busy' });
        },
      ),
      'call.accept': frame<CallAcceptFrame>({ required: { ref: 'ref', call: 'string' } }, async (conn, f) => {
        await caller(deps, conn, f.ref, f.call);
        const answered = await stored(() => calls.accept(conn.app.key, page(conn), f.call), f.ref, { call: f.call });
        if (!answered) throw noCall(f.ref, f.call);
        conn.send({ t: 'call.accepted', ref: f.ref, call: f.call });
      }),
      'call.reject': frame<CallRejectFrame>({ required: { call: 'string' } }, async (conn, f) => {
        await caller(deps, conn, undefined, f.call);
        const done = await stored(() => calls.hangup(conn.app.key, page(conn), f.call, 'reject'), undefined, {
          call: f.call,
        });
        if (!done) throw noCall(undefined, f.call);
      }),
      'call.hangup': frame<CallHangupFrame>(
        { required: { call: 'string' }, optional: { failed: 'boolean' } },
        async (conn, f) => {
          await caller(deps, conn, undefined, f.call);
          const cause = f.failed === true ? 'failed' : 'hangup';
          const done = await stored(() => calls.hangup(conn.app.key, page(conn), f.call, cause), undefined, {
            call: f.call,
          });
          if (!done) throw noCall(undefined, f.call);
        },
      ),
      'call.signal': frame<CallSignalFrame>({ required: { call: 'string', data: 'object' } }, async (conn, f) => {
        const text = frameData(f.t, f.data, undefined, { call: f.call });
        if (Buffer.byteLength(text) > SIGNAL_MAX_BYTES) {
          throw new FrameError('too_large', `a signal's data is at most ${SIGNAL_MAX_BYTES} bytes`, undefined, {
            call: f.call,
          });
        }
        const peer = await stored(() => calls.peerOf(conn.app.key, page(conn), f.call), undefined, { call: f.call });
        if (peer === undefined) throw noCall(undefined, f.call);
        await stored(
          () => calls.signal(conn.app.key, peer, { t: 'call.signal', call: f.call, data: f.data }),
          undefined,
          { call: f.call },
        );
      }),
    },
    opened: async (conn) => {
      if (conn.user === null || !conn.app.features.includes('calls')) return;
      await calls.ringing(conn.app.key, { ...page(conn), user: conn.user });
    },
    closed: (conn) => calls.pageClosed(conn.app.key, page(conn)),
  };
}
