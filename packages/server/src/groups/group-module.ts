import {
  type GroupJoinFrame,
  type GroupLeaveFrame,
  type GroupSignalFrame,
  roomNameProblem,
  SIGNAL_MAX_BYTES,
} from '@realtime/protocol';
import { StoreError } from '../engines/store-error.js';
import type { Connection } from '../gateway/connection.js';
import type { GatewayDeps } from '../gateway/context.js';
import { FrameError, frame, type PageModule } from '../gateway/frame-registry.js';
import { refreshApp } from '../gateway/room-frames.js';
import { TokenError, verifyCallToken } from '../gateway/tokens.js';
import type { GroupService } from './group-service.js';

/** An error frame naming the group (in `room`'s place there is none: the message names it). */
function refused(code: ConstructorParameters<typeof FrameError>[0], message: string, ref?: number): FrameError {
  return new FrameError(code, message, ref);
}

async function stored<T>(step: () => Promise<T>, ref: number | undefined): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof StoreError)
      throw refused('unavailable', 'the service could not reach its storage; try again', ref);
    throw error;
  }
}

/** Group calls: join by the token's name, leave, and signals between two pages of a group. */
export function groupModule(deps: GatewayDeps, groups: GroupService): PageModule {
  return {
    frames: {
      'group.join': frame<GroupJoinFrame>(
        { required: { ref: 'ref', group: 'string', token: 'string' } },
        async (conn, f) => {
          const problem = roomNameProblem(f.group);
          if (problem) throw refused('bad_frame', `group.join: ${problem.replace('room name', 'group name')}`, f.ref);
          const app = await refreshApp(deps, conn);
          if (!app) return;
          if (!app.features.includes('groups')) {
            throw refused('not_included', "the app's plan does not include group calls", f.ref);
          }
          if (conn.user === null) throw refused('wrong_user', 'group calls need a page signed in as a user', f.ref);
          let claims: Awaited<ReturnType<typeof verifyCallToken>>;
          try {
            claims = await verifyCallToken(f.token, app.secret, deps.now());
          } catch (error) {
            if (error instanceof TokenError) throw refused(error.code, error.message, f.ref);
            throw error;
          }
          if (claims.sub !== conn.user) throw refused('wrong_user', 'the call token was issued to another user', f.ref);
          if (claims.group !== f.group) {
            throw refused(
              'wrong_call',
              claims.group === undefined
                ? 'the call token is for a call to one person, not a group call'
                : 'the call token was issued for another group call',
              f.ref,
            );
          }
          const member = { page: conn.id, user: conn.user, media: [...claims.media], joinedAt: deps.now() };
          const peers = await stored(() => groups.join(app.key, f.group, member), f.ref);
          if (peers === 'already')
            throw refused('bad_frame', 'group.join: this page is in that group call already', f.ref);
          if (peers === 'full') throw refused('group_full', 'the group call has as many pages as it takes', f.ref);
          conn.send({
            t: 'group.joined',
            ref: f.ref,
            group: f.group,
            page: conn.id,
            peers,
            ice: groups.ice(conn.user),
          });
        },
      ),
      'group.leave': frame<GroupLeaveFrame>({ required: { ref: 'ref', group: 'string' } }, async (conn, f) => {
        const left = await stored(() => groups.leave(conn.app.key, f.group, conn.id), f.ref);
        if (!left) throw refused('not_in_group', 'this page is not in that group call', f.ref);
        conn.send({ t: 'group.left', ref: f.ref, group: f.group });
      }),
      'group.signal': frame<GroupSignalFrame>(
        { required: { group: 'string', to: 'string', data: 'object' } },
        async (conn, f) => {
          if (Buffer.byteLength(JSON.stringify(f.data)) > SIGNAL_MAX_BYTES) {
            throw refused('too_large', `a signal's data is at most ${SIGNAL_MAX_BYTES} bytes`);
          }
          if (
            !groups.isIn(conn.id, f.group) ||
            !(await stored(() => groups.has(conn.app.key, f.group, f.to), undefined))
          ) {
            throw refused('not_in_group', 'this page, or the page it signals, is not in that group call');
          }
          const signal = { t: 'group.signal', group: f.group, from: conn.id, data: f.data };
          await stored(() => groups.signal(conn.app.key, f.to, signal), undefined);
        },
      ),
    },
    closed: (conn: Connection) => groups.pageClosed(conn.app.key, conn.id),
  };
}
