import type { JoinFrame } from '@realtime/protocol';
import type { HistoryPage, PageBound } from '../engines/types.js';
import type { RoomServiceDeps } from './room-deps.js';

/**
 * One page of a replay: what the service holds of a room's history per joining page at a time. A
 * page that does not read keeps at most this (and its bounded queue) in memory, never the room.
 */
export const REPLAY_PAGE: Readonly<PageBound> = { events: 256, bytes: 1_048_576 };

/** What a join read of the room's history: its first page (none on a plan without history), and whether a gap shows. */
export interface HistoryRead {
  first: HistoryPage | undefined;
  truncated: boolean;
}

/**
 * A join's read of the room's history, once the seat is taken: the kept events after `since`
 * (a resume, in the room's `epoch`), else the last N (none on a re-join); a first join learns the
 * room's epoch too, to resume with later.
 */
export async function readHistory(
  deps: Pick<RoomServiceDeps, 'history' | 'now'>,
  app: { key: string; features: readonly string[] },
  frame: Pick<JoinFrame, 'room' | 'since' | 'last' | 'epoch'>,
  rejoin: boolean,
): Promise<HistoryRead> {
  const now = deps.now();
  if (!app.features.includes('history')) {
    // Rooms keep nothing on this plan: a page resuming may have missed events and none can come back.
    return { first: undefined, truncated: frame.since !== undefined };
  }
  if (frame.since !== undefined) {
    const first = await deps.history.since(app.key, frame.room, frame.since, now, REPLAY_PAGE, frame.epoch);
    return { first, truncated: first.truncated };
  }
  const count = frame.last !== undefined && !rejoin ? frame.last : 0;
  return { first: await deps.history.last(app.key, frame.room, count, now, REPLAY_PAGE), truncated: false };
}
