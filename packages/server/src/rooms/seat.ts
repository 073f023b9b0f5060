import type { RoomClaims } from '@realtime/protocol';
import type { Membership, RoomPage } from './room-page.js';

/** The page's place in a room, and the one it had there before this join (a re-join), if any. */
export interface Seating {
  membership: Membership;
  existing: Membership | undefined;
}

/**
 * Takes the page's seat in the room (a re-join keeps its seat): from now on live frames wait in the
 * seat while history is replayed. The page is a presence member when the token says so and it has a user.
 */
export function takeSeat(page: RoomPage, room: string, claims: RoomClaims): Seating {
  const existing = page.rooms.get(room);
  const seat = existing?.seat ?? { page, replay: [], replayBytes: 0 };
  if (existing) {
    seat.replay = [];
    seat.replayBytes = 0;
  }
  const member = claims.presence === true && page.user !== null;
  const membership: Membership = { seat, claims, member };
  page.rooms.set(room, membership);
  return { membership, existing };
}
