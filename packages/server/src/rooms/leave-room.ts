import { diagnostics } from '../core/diagnostics.js';
import { leavePresence } from './member-presence.js';
import { vacate } from './occupancy.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';

/** Takes a page out of a room: its seat, and its presence (a user leaves with their last page). */
export async function leaveRoom(
  deps: Pick<RoomServiceDeps, 'node' | 'hub' | 'presence' | 'broker' | 'departures' | 'log' | 'now'>,
  page: RoomPage,
  room: string,
): Promise<void> {
  const membership = page.rooms.get(room);
  if (!membership) return;
  page.rooms.delete(room);
  const app = page.app.key;
  if (diagnostics.left.hasSubscribers) diagnostics.left.publish({ node: deps.node, app, room, user: page.user });
  await deps.hub.removeSeat(app, room, membership.seat);
  await leavePresence(deps, page, room, membership);
  await vacate(deps, app, room, page.id);
}
