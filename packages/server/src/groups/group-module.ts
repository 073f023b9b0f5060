import {
  GROUPS_PER_PAGE,
  type GroupJoinFrame,
  type GroupLeaveFrame,
  type GroupSignalFrame,
  roomNameProblem,
  SIGNAL_MAX_BYTES,
  type SocketErrorCode,
} from '@realtime/protocol';
import { refreshApp } from '../apps/page-app.js';
import { acceptedSecrets } from '../apps/secret-rotation.js';
import type { Connection } from '../gateway/connection.js';
import type { GatewayDeps } from '../gateway/context.js';
import { FrameError, frame, frameData, type PageModule, stored } from '../gateway/frame-registry.js';
import { TokenError, verifyCallToken } from '../gateway/tokens.js';
import { readUnitSignal, unitRefusal } from '../units/unit-signal.js';
import type { GroupService } from './group-service.js';

/** An error frame naming the group. */
function refused(code: SocketErrorCode, message: string, ref: number | undefined, group: string): FrameError {
  return new FrameError(code, message, ref, { group });
}

const isOffer = (sdp: unknown): boolean =>
  typeof sdp === 'object' && sdp !== null && (sdp as { type?: unknown }).type === 'offer';

/** Group calls: join by the token's name, leave, and signals between two pages of a group. */
export function groupModule(deps: GatewayDeps, groups: GroupService): PageModule {
  return {
    frames: {
      'group.join': frame<GroupJoinFrame>(
        { required: { ref: 'ref', group: 'string', token: 'string' } },
        async (conn, f) => {
          const problem = roomNameProblem(f.group);
          if (problem)
            throw refused('bad_frame', `group.join: ${problem.replace('room name', 'group name')}`, f.ref, f.group);
          const app = await refreshApp(deps, conn);
          if (!app) return;
          if (!app.features.includes('groups')) {
            throw refused('not_included', "the app's plan does not include group calls", f.ref, f.group);
          }
          if (conn.user === null)
            throw refused('wrong_user', 'group calls need a page signed in as a user', f.ref, f.group);
          let claims: Awaited<ReturnType<typeof verifyCallToken>>;
          try {
            const now = deps.now();
            claims = await verifyCallToken(f.token, acceptedSecrets(app, now), now);
          } catch (error) {
            if (error instanceof TokenError) throw refused(error.code, error.message, f.ref, f.group);
            throw error;
          }
          if (claims.sub !== conn.user)
            throw refused('wrong_user', 'the call token was issued to another user', f.ref, f.group);
          if (claims.group !== f.group) {
            throw refused(
              'wrong_call',
              claims.group === undefined
                ? 'the call token is for a call to one person, not a group call'
                : 'the call token was issued for another group call',
              f.ref,
              f.group,
            );
          }
          if (groups.groupsOf(conn.id) >= GROUPS_PER_PAGE) {
            throw refused('group_full', `a page is in at most ${GROUPS_PER_PAGE} group calls at once`, f.ref, f.group);
          }
          const member = { page: conn.id, user: conn.user, media: [...claims.media], joinedAt: deps.now() };
          const joined = await stored(() => groups.join(app.key, f.group, member), f.ref, { group: f.group });
          if (joined === 'already')
            throw refused('bad_frame', 'group.join: this page is in that group call already', f.ref, f.group);
          if (joined === 'full')
            throw refused('group_full', 'the group call has as many pages as it takes', f.ref, f.group);
          conn.send({
            t: 'group.joined',
            ref: f.ref,
            group: f.group,
            page: conn.id,
            peers: joined.peers,
            ice: groups.ice(conn.user),
            mode: joined.mode,
          });
          // The units' offers follow the answer (a group that this join switched has no units up yet).
          if (joined.mode === 'unit') await groups.offerPeers(app.key, f.group, conn.id, joined.peers);
        },
      ),
      'group.leave': frame<GroupLeaveFrame>({ required: { ref: 'ref', group: 'string' } }, async (conn, f) => {
        const left = await stored(() => groups.leave(conn.app.key, f.group, conn.id), f.ref, { group: f.group });
        if (!left) throw refused('not_in_group', 'this page is not in that group call', f.ref, f.group);
        conn.send({ t: 'group.left', ref: f.ref, group: f.group });
      }),
      'group.signal': frame<GroupSignalFrame>(
        { required: { group: 'string', to: 'string', data: 'object' } },
        async (conn, f) => {
          if (Buffer.byteLength(frameData(f.t, f.data, undefined, { group: f.group })) > SIGNAL_MAX_BYTES) {
            throw refused('too_large', `a signal's data is at most ${SIGNAL_MAX_BYTES} bytes`, undefined, f.group);
          }
          const notIn = () =>
            refused('not_in_group', 'this page, or the page it signals, is not in that group call', undefined, f.group);
          if (!groups.isIn(conn.id, f.group)) throw notIn();
          const route = await stored(() => groups.route(conn.app.key, f.group, f.to), undefined, { group: f.group });
          if (!route.present) throw notIn();
          if (!route.unit) {
            const signal = { t: 'group.signal', group: f.group, from: conn.id, data: f.data };
            await stored(() => groups.signal(conn.app.key, f.to, signal), undefined, { group: f.group });
            return;
          }
          const own = f.to === conn.id;
          // A page-to-page offer sent as the group switched to units: the page offers to its unit next.
          if (!own && isOffer(f.data.sdp)) return;
          const signal = readUnitSignal(f.data, own, own ? 'a page to its own unit' : "a page to another page's unit");
          if (typeof signal === 'string') throw refused('bad_frame', `group.signal: ${signal}`, undefined, f.group);
          try {
            await stored(() => groups.unitSignal(conn.app.key, f.group, conn.id, f.to, signal), undefined, {
              group: f.group,
            });
          } catch (error) {
            if (error instanceof FrameError) throw error;
            const refusal = unitRefusal(error);
            if (refusal.operator)
              deps.log.error({ err: error, page: conn.id }, 'a forwarding unit could not start a session');
            else deps.log.warn({ err: error, page: conn.id }, 'a group signal was refused by the forwarding unit');
            throw refused(refusal.code, `group.signal: ${refusal.message}`, undefined, f.group);
          }
        },
      ),
    },
    closed: (conn: Connection) => groups.pageClosed(conn.app.key, conn.id),
  };
}
