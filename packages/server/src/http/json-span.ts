/**
 * Byte lengths of `data` members in a JSON body that JSON.parse already accepted, measured on the
 * bytes as sent (the limit is on `data`'s JSON text as sent, whitespace included). Only called for
 * bodies over the data limit, since a smaller body cannot hold a larger member.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

function skipSpace(buf: Uint8Array, i: number): number {
  while (i < buf.length) {
    const c = buf[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
    i++;
  }
  return i;
}

function skipString(buf: Uint8Array, i: number): number {
  i++;
  while (i < buf.length && buf[i] !== QUOTE) i += buf[i] === BACKSLASH ? 2 : 1;
  return i + 1;
}

/** Index just past the JSON value starting at i. */
function skipValue(buf: Uint8Array, i: number): number {
  const c = buf[i];
  if (c === QUOTE) return skipString(buf, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    while (i < buf.length) {
      const b = buf[i];
      if (b === QUOTE) {
        i = skipString(buf, i);
        continue;
      }
      if (b === OPEN_OBJECT || b === OPEN_ARRAY) depth++;
      else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  while (i < buf.length) {
    const b = buf[i];
    if (
      b === COMMA ||
      b === CLOSE_OBJECT ||
      b === CLOSE_ARRAY ||
      b === 0x20 ||
      b === 0x0a ||
      b === 0x0d ||
      b === 0x09
    ) {
      break;
    }
    i++;
  }
  return i;
}

function readKey(buf: Uint8Array, start: number, end: number): string {
  const raw = Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString('utf8');
  return raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
}

/** Calls visit for each member of the object at i (the last of duplicate keys wins, as in JSON.parse). */
function eachMember(buf: Uint8Array, i: number, visit: (key: string, start: number, end: number) => void): void {
  i = skipSpace(buf, i);
  if (buf[i] !== OPEN_OBJECT) return;
  i = skipSpace(buf, i + 1);
  while (i < buf.length && buf[i] !== CLOSE_OBJECT) {
    const keyEnd = skipString(buf, i);
    const key = readKey(buf, i, keyEnd);
    i = skipSpace(buf, keyEnd);
    if (buf[i] === COLON) i = skipSpace(buf, i + 1);
    const end = skipValue(buf, i);
    visit(key, i, end);
    i = skipSpace(buf, end);
    if (buf[i] === COMMA) i = skipSpace(buf, i + 1);
  }
}

/** Byte length of the top-level `data` member, or 0 when there is none. */
export function dataBytes(buf: Uint8Array, from = 0): number {
  let size = 0;
  eachMember(buf, from, (key, start, end) => {
    if (key === 'data') size = end - start;
  });
  return size;
}

/** Byte length of each `events[i].data` of a batch body, in order. */
export function batchDataBytes(buf: Uint8Array): number[] {
  let sizes: number[] = [];
  eachMember(buf, 0, (key, start) => {
    if (key !== 'events') return;
    // The last `events` member wins, as in JSON.parse, even when it is not a list.
    sizes = [];
    if (buf[start] !== OPEN_ARRAY) return;
    let i = skipSpace(buf, start + 1);
    while (i < buf.length && buf[i] !== CLOSE_ARRAY) {
      const end = skipValue(buf, i);
      sizes.push(buf[i] === OPEN_OBJECT ? dataBytes(buf, i) : 0);
      i = skipSpace(buf, end);
      if (buf[i] === COMMA) i = skipSpace(buf, i + 1);
    }
  });
  return sizes;
}
