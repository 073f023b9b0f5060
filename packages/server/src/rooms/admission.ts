import { type JoinFrame, type RoomClaims, roomNameProblem } from '@realtime/protocol';
import { refreshApp } from '../apps/page-app.js';
import { acceptedSecrets } from '../apps/secret-rotation.js';
import type { App } from '../engines/types.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { RoomRefusal } from './room-refusal.js';

/** A join the room token allows: the app as it is now and what the token grants. */
export interface Admission {
  app: App;
  claims: RoomClaims;
}

/**
 * The first step of a join: the room's name, the app as the store has it now, the room token under
 * its secret (for this room, this page's user), and the plan's presence. Undefined when the page
 * closed meanwhile (or its app is gone), so there is nothing to join.
 */
export async function admit(
  deps: Pick<RoomServiceDeps, 'apps' | 'verifyToken' | 'now' | 'revocations'>,
  page: RoomPage,
  frame: Pick<JoinFrame, 'room' | 'token'>,
): Promise<Admission | undefined> {
  const { room } = frame;
  const roomProblem = roomNameProblem(room);
  if (roomProblem) throw new RoomRefusal('bad_room', roomProblem);
  const app = await refreshApp(deps, page);
  if (!app) return undefined;
  const now = deps.now();
  const claims = await deps.verifyToken(frame.token, acceptedSecrets(app, now), now);
  if (claims.room !== room) throw new RoomRefusal('wrong_room', 'the room token was issued for another room');
  if (claims.sub !== undefined && claims.sub !== page.user) {
    throw new RoomRefusal('wrong_user', 'the room token was issued to another user');
  }
  if (claims.presence && !app.features.includes('presence')) {
    throw new RoomRefusal('not_included', "the app's plan does not include presence");
  }
  // Refused when issued before a revocation of its user's (its `sub`) or the app's tokens.
  const revoked = deps.revocations?.revoked(app.key, claims.sub, claims) ?? false;
  if (revoked === true || (revoked !== false && (await revoked))) {
    throw new RoomRefusal(
      'token_revoked',
      'the room token was issued before a revocation of its tokens: fetch a fresh one',
    );
  }
  if (page.state === 'closed') return undefined;
  return { app, claims };
}
