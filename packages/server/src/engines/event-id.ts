import type { EventId } from '@realtime/protocol';

// The id format is the protocol package's; issuing the next id is the stores' own rule.
export { compareEventIds, type EventId, formatEventId, parseEventId } from '@realtime/protocol';

/** The id after `last` at time `nowMs`: never smaller, so ids rise strictly even if the clock steps back. */
export function nextEventId(last: EventId | undefined, nowMs: number): EventId {
  if (!last || nowMs > last.ms) return { ms: nowMs, seq: 0 };
  return { ms: last.ms, seq: last.seq + 1 };
}
