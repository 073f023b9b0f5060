/**
 * How a publication travels on a Redis channel: a JSON header, a newline, then the data's JSON text
 * as is (never escaped into a string). JSON.stringify never writes a raw newline, so the first one
 * ends the header. The header is [app, room, user, event, id, from, origin], null for what is unset.
 * The publish script writes the id into the header, between `head` and `tail`.
 */
import type { Publication } from '../types.js';

const json = (value: string | undefined): string => (value === undefined ? 'null' : JSON.stringify(value));

/** The header around the id the script will put in (ids are digits and '-': nothing to escape). */
export function headerAroundId(p: Omit<Publication, 'id' | 'data'>): { head: string; tail: string } {
  return {
    head: `[${json(p.app)},${json(p.room)},${json(p.user)},${json(p.event)},"`,
    tail: `",${json(p.from)},${json(p.origin)}]`,
  };
}

/** The whole header of a publication without an id. */
export function headerWithoutId(p: Omit<Publication, 'id' | 'data'>): string {
  return `[${json(p.app)},${json(p.room)},${json(p.user)},${json(p.event)},null,${json(p.from)},${json(p.origin)}]`;
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
  if (!Array.isArray(header) || header.length !== 7) return undefined;
  const [app, room, user, event, id, from, origin] = header as unknown[];
  if (typeof app !== 'string' || typeof event !== 'string') return undefined;
  const publication: Publication = { app, event, data: message.slice(end + 1) };
  if (typeof room === 'string') publication.room = room;
  if (typeof user === 'string') publication.user = user;
  if (typeof id === 'string') publication.id = id;
  if (typeof from === 'string') publication.from = from;
  if (typeof origin === 'string') publication.origin = origin;
  return publication;
}
