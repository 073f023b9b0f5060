/**
 * Room event ids are `<ms>-<seq>` (docs/protocol.md): a time in milliseconds and a counter within
 * it, strictly rising within a room. The service issues and parses them; pages only compare them.
 */

/** An event id as its two numbers. */
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

/** Negative, zero or positive as `a` is before, equal to or after `b`. */
export function compareEventIds(a: EventId, b: EventId): number {
  return a.ms - b.ms || a.seq - b.seq;
}

const ID_SHAPE = /^(\d+)-(\d+)$/;

function compareDigits(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Compares two ids as written, part by part as numbers of any length (no float conversion, so a
 * page never misorders ids of a service with longer numbers). Undefined when either is not an id.
 */
export function compareEventIdTexts(a: string, b: string): number | undefined {
  const x = ID_SHAPE.exec(a);
  const y = ID_SHAPE.exec(b);
  if (!x || !y) return undefined;
  return compareDigits(x[1] as string, y[1] as string) || compareDigits(x[2] as string, y[2] as string);
}

/**
 * Whether a room event with this id is new to a page that last saw `last`. An id of an unknown
 * shape is new unless it equals `last`, so a service with other ids still delivers events.
 */
export function isNewerEventId(id: string, last: string | undefined): boolean {
  if (last === undefined) return true;
  const order = compareEventIdTexts(id, last);
  return order === undefined ? id !== last : order > 0;
}
