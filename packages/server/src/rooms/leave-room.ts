import { leavePresence } from './member-presence.js';
import { vacate } from './occupancy.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { tappedPage } from './room-tap.js';

/** Takes a page out of a room: its seat, and its presence (a user leaves with their last page). */
export async function leaveRoom(
  deps: Pick<RoomServiceDeps, 'hub' | 'presence' | 'broker' | 'departures' | 'log' | 'now' | 'tap'>,
  page: RoomPage,
  room: string,
): Promise<void> {
  const membership = page.rooms.get(room);
  if (!membership) return;
  page.rooms.delete(room);
  const app = page.app.key;
  if (deps.tap?.watching(app)) deps.tap.record(app, tappedPage(page, 'leave', room));
  await deps.hub.removeSeat(app, room, membership.seat);
  await leavePresence(deps, page, room, membership);
  await vacate(deps, app, room, page.id);
}
