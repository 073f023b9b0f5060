import type { Seat } from '../core/hub.js';
import type { RoomServiceDeps } from './room-deps.js';

/**
 * A page's seat goes into the hub (confirmed by the broker before history is read: nothing published
 * in between is lost) and the page into the room's occupancy: the room's first page reports
 * `room.occupied`.
 */
export async function occupy(
  deps: Pick<RoomServiceDeps, 'hub' | 'presence' | 'departures'>,
  app: string,
  room: string,
  seat: Seat,
): Promise<void> {
  await deps.hub.addSeat(app, room, seat);
  if (await deps.presence.enterRoom(app, room, seat.page.id)) {
    await deps.departures.record(app, { type: 'room.occupied', room });
  }
}

/** The page leaves the room's occupancy: the room's last page reports `room.vacated`. */
export async function vacate(
  deps: Pick<RoomServiceDeps, 'presence' | 'departures'>,
  app: string,
  room: string,
  page: string,
): Promise<void> {
  if (await deps.presence.exitRoom(app, room, page)) {
    await deps.departures.record(app, { type: 'room.vacated', room });
  }
}
