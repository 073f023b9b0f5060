import type { MemberPage } from '../engines/types.js';
import type { HistoryRead } from './history-read.js';

/**
 * The `joined` answer: how many kept events the replay brings (`replay`), the room's epoch when
 * history was read, the members of a presence join (with the count and a cursor beyond the
 * threshold), and `truncated` when the page may have missed events that cannot come back.
 */
export function joinedFrame(
  ref: number,
  room: string,
  read: HistoryRead,
  total: number,
  members: MemberPage | undefined,
  threshold: number,
): Record<string, unknown> {
  const joined: Record<string, unknown> = { t: 'joined', ref, room, replay: total };
  if (read.first) joined.epoch = read.first.epoch;
  if (members) {
    joined.members = members.members;
    if (members.count > threshold) {
      joined.count = members.count;
      if (members.cursor !== undefined) joined.cursor = members.cursor;
    }
  }
  if (read.truncated) joined.truncated = true;
  return joined;
}
