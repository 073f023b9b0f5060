import type { ListFrame } from '@realtime/protocol';
import type { MemberPage } from '../engines/types.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { RoomRefusal } from './room-refusal.js';

/**
 * The members a joining presence member is given: up to the threshold, a small room's whole list;
 * beyond it, its first page (and the room is large on this node from now on).
 */
export async function firstMembers(
  deps: Pick<RoomServiceDeps, 'hub' | 'presence'>,
  app: string,
  room: string,
): Promise<MemberPage> {
  const threshold = deps.hub.memberScale.threshold;
  const members = await deps.presence.memberPage(app, room, { limit: threshold });
  if (members.count > threshold) deps.hub.largeRoom(app, room, members);
  return members;
}

/** list: a page of a presence room's members, after the frame's cursor (none: the first page). */
export async function listMembers(
  deps: Pick<RoomServiceDeps, 'hub' | 'presence'>,
  page: RoomPage,
  frame: Pick<ListFrame, 'ref' | 'room' | 'cursor'>,
): Promise<void> {
  const { ref, room } = frame;
  if (!page.rooms.has(room)) throw new RoomRefusal('not_joined', 'the page has not joined that room');
  const limit = deps.hub.memberScale.pageSize;
  const members = await deps.presence.memberPage(
    page.app.key,
    room,
    frame.cursor === undefined ? { limit } : { after: frame.cursor, limit },
  );
  const listed: Record<string, unknown> = { t: 'listed', ref, room, members: members.members, count: members.count };
  if (members.cursor !== undefined) listed.cursor = members.cursor;
  page.send(listed);
}
