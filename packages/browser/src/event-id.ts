/**
 * Room event ids are `<ms>-<seq>` (docs/protocol.md), strictly rising within a room.
 * They are compared as numbers, part by part, without converting to floats, so any length is exact.
 */
const ID_SHAPE = /^(\d+)-(\d+)$/;

function compareDigits(a: string, b: string): number {
  const x = a.replace(/^0+(?=\d)/, '');
  const y = b.replace(/^0+(?=\d)/, '');
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Negative, zero or positive as `a` is before, equal to or after `b`; undefined when either is not an id. */
export function compareEventIds(a: string, b: string): number | undefined {
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
  const order = compareEventIds(id, last);
  return order === undefined ? id !== last : order > 0;
}
