/**
 * How a publication travels on a Redis channel: a JSON header, a newline, then the data's JSON text
 * as is (never escaped into a string). JSON.stringify never writes a raw newline, so the first one
 * ends the header. The header is an object of the publication's text fields (app, room, user, node,
 * event, from, origin, ask, replyTo, id: whichever are set), so a new text field travels without a
 * change here. The publish script writes the id into the header, between `head` and `tail`.
 */
import type { Publication } from '../types.js';

/** What an Outgoing holds besides the publication's own text fields. */
type Fields = Omit<Publication, 'id' | 'data'> & { data?: string };

function textFields(p: Fields): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(p)) {
    // data travels after the header; keep, report, presence and dataBytes are not texts.
    if (typeof value === 'string' && name !== 'data' && name !== 'id') fields[name] = value;
  }
  return fields;
}

/** The header around the id the script will put in (ids are digits and '-': nothing to escape). */
export function headerAroundId(p: Fields): { head: string; tail: string } {
  const json = JSON.stringify(textFields(p));
  return { head: `${json.slice(0, -1)}${json === '{}' ? '' : ','}"id":"`, tail: '"}' };
}

/** The whole header of a publication without an id. */
export function headerWithoutId(p: Fields): string {
  return JSON.stringify(textFields(p));
}

/** Reads a channel message; undefined for anything not of this shape. */
export function decodePublication(message: string): Publication | undefined {
  const end = message.indexOf('\n');
  if (end < 0) return undefined;
  let header: unknown;
  try {
    header = JSON.parse(message.slice(0, end));
  } catch {
    return undefined;
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return undefined;
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(header)) if (typeof value === 'string') fields[name] = value;
  if (fields.app === undefined || fields.event === undefined) return undefined;
  return { ...fields, app: fields.app, event: fields.event, data: message.slice(end + 1) };
}
