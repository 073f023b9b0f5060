/** Event ids are `<ms>-<seq>`: a time in milliseconds and a counter within that millisecond. */
export interface EventId {
  ms: number;
  seq: number;
}

export function formatEventId(id: EventId): string {
  return `${id.ms}-${id.seq}`;
}

/** Parses an event id; undefined for anything not of the shape `<digits>-<digits>` in safe range. */
export function parseEventId(text: string): EventId | undefined {
  const dash = text.indexOf('-');
  if (dash <= 0 || dash > 15 || text.length - dash - 1 > 15 || text.length === dash + 1) return undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (i !== dash && (c < 48 || c > 57)) return undefined;
  }
  return { ms: Number(text.slice(0, dash)), seq: Number(text.slice(dash + 1)) };
}

/** The id after `last` at time `nowMs`: never smaller, so ids rise strictly even if the clock steps back. */
export function nextEventId(last: EventId | undefined, nowMs: number): EventId {
  if (!last || nowMs > last.ms) return { ms: nowMs, seq: 0 };
  return { ms: last.ms, seq: last.seq + 1 };
}

export function compareEventIds(a: EventId, b: EventId): number {
  return a.ms - b.ms || a.seq - b.seq;
}
