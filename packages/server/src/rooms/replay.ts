import { encodeEvent } from '../core/frame-encoder.js';
import type { Frame } from '../core/ws-frame.js';
import type { HistoryPage, KeptEvent, ResumeResult, RoomEvent } from '../engines/types.js';
import { REPLAY_PAGE } from './history-read.js';
import type { RoomServiceDeps } from './room-deps.js';
import { isClosed, type RoomPage } from './room-page.js';

/** Large data is encoded once into its own buffer, not first joined to the frame's text (one copy less). */
const LARGE_DATA = 64 * 1024;

/** A kept event's frame: the same encoding as a live one (the hub's), so a page cannot tell them apart. */
export function keptFrame(app: string, room: string, kept: KeptEvent): Frame {
  const publication: RoomEvent = { kind: 'room', app, room, id: kept.id, event: kept.event, data: kept.data };
  if (kept.from !== undefined) publication.from = kept.from;
  if (kept.data.length > LARGE_DATA) publication.dataBytes = Buffer.from(kept.data);
  return encodeEvent(publication);
}

/**
 * Sends a room's kept events at the page's pace, one page of history at a time: the read's `first`
 * page, then `since` the last one sent, until `total` went (the count `joined` announced). Returns
 * the ids sent, for dropping the live frames the replay already carried; undefined once the page closed.
 */
export async function replay(
  deps: Pick<RoomServiceDeps, 'history' | 'now'>,
  page: RoomPage,
  room: string,
  first: HistoryPage,
  total: number,
): Promise<Set<string> | undefined> {
  const sent = new Set<string>();
  let events = first.events;
  // Only `events` holds them: each page is garbage once sent, so a replay holds one at a time.
  first.events = [];
  let last: string | undefined;
  for (;;) {
    for (const event of events) {
      // Waits while the page's queue is over half full; a page that does not read is closed (4200).
      await page.paced();
      if (isClosed(page)) return undefined;
      page.deliver(keptFrame(page.app.key, room, event));
      sent.add(event.id);
      last = event.id;
    }
    events = [];
    const left = total - sent.size;
    if (left <= 0 || last === undefined) return sent;
    let next: ResumeResult;
    try {
      next = await deps.history.since(
        page.app.key,
        room,
        last,
        deps.now(),
        { ...REPLAY_PAGE, events: Math.min(REPLAY_PAGE.events, left) },
        first.epoch,
      );
    } catch (error) {
      // Half a replay cannot be finished without a gap: the page reconnects and resumes from its last id.
      page.close(1011, 'the room history could not be read');
      throw error;
    }
    if (isClosed(page)) return undefined;
    if (next.dropped || next.epoch !== first.epoch) {
      // The room's limit or age overtook the page while it read (it could not keep up), or the room's
      // stream was lost under it: closed (4200), it resumes from its last id and learns of the gap
      // from `truncated`.
      page.slow();
      return undefined;
    }
    if (next.events.length === 0) return sent;
    events = next.events;
  }
}
