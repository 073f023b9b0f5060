/**
 * How a publication travels on a Redis channel (between nodes of one version): a header, a newline,
 * then the body as is (a room or user event's data, a page frame, a console entry: never escaped into
 * a string). The header is a JSON array, its first item the kind and the rest its fields by place,
 * absent ones at the end left out (null before a present one). JSON never writes a raw newline, so
 * the first one ends the header.
 *
 *   room event   ["r",id|null,app,room,event,from?,origin?]   body: data
 *   user event   ["u",app,user,event]                          body: data
 *   user frame   ["f",app,user,except?]                        body: frame
 *   user close   ["c",app,user,code]                           body: close reason
 *   ask          ["a",app,user,ask,replyTo,event]              body: data
 *   node         ["n",node,app,"f",page]                       body: page frame
 *                ["n",node,app,"s",service]                    body: data
 *                ["n",node,app,"r",ask]                        body: reply data
 *                ["n",node,app,"d",ask]                        body: empty
 *                ["n",node,app,"e"]                            body: console entry
 *   broadcast    ["b","w"]                                     body: console watch announcement
 *                ["b","g"]                                     body: the deleted app's key
 *                ["b","t",app,before,user?]                    body: empty (tokens revoked)
 *
 * The publish script writes a room event's id into its header, between `head` and `tail`.
 */
import type { Outgoing, OutgoingRoomEvent, Publication, RoomEvent } from '../broker.js';

/** A publication's header and body; for a room event with an id to come, the id goes between head and tail. */
export interface Encoded {
  head: string;
  tail: string;
  body: string;
}

/** The fields after the id of a room event's header: `,"app","room","event"…]`. */
function roomFields(event: OutgoingRoomEvent): string {
  const { app, room, origin } = event;
  const from = event.from ?? null;
  const fields =
    origin !== undefined
      ? [app, room, event.event, from, origin]
      : from !== null
        ? [app, room, event.event, from]
        : [app, room, event.event];
  return `,${JSON.stringify(fields).slice(1)}`;
}

/**
 * The header and body of a publication as sent. A room event that gets an id (not a presence
 * change) has its header cut where the id goes (ids are digits and '-': nothing to escape); every
 * other publication's header is whole in `head`.
 */
export function encodePublication(event: Outgoing): Encoded {
  switch (event.kind) {
    case 'room':
      if (event.presence) return { head: `["r",null${roomFields(event)}`, tail: '', body: event.data };
      return { head: '["r","', tail: `"${roomFields(event)}`, body: event.data };
    case 'user':
      return { head: JSON.stringify(['u', event.app, event.user, event.event]), tail: '', body: event.data };
    case 'user.frame': {
      const header =
        event.except === undefined ? ['f', event.app, event.user] : ['f', event.app, event.user, event.except];
      return { head: JSON.stringify(header), tail: '', body: event.frame };
    }
    case 'user.close':
      return { head: JSON.stringify(['c', event.app, event.user, event.code]), tail: '', body: event.reason };
    case 'ask':
      return {
        head: JSON.stringify(['a', event.app, event.user, event.ask, event.replyTo, event.event]),
        tail: '',
        body: event.data,
      };
    case 'node': {
      const { node, app, message } = event;
      switch (message.type) {
        case 'page.frame':
          return { head: JSON.stringify(['n', node, app, 'f', message.page]), tail: '', body: message.frame };
        case 'service':
          return { head: JSON.stringify(['n', node, app, 's', message.service]), tail: '', body: message.data };
        case 'ask.reply':
          return { head: JSON.stringify(['n', node, app, 'r', message.ask]), tail: '', body: message.data };
        case 'ask.decline':
          return { head: JSON.stringify(['n', node, app, 'd', message.ask]), tail: '', body: '' };
        case 'console.entry':
          return { head: JSON.stringify(['n', node, app, 'e']), tail: '', body: message.entry };
      }
      break;
    }
    case 'broadcast': {
      const { message } = event;
      if (message.type === 'console.watch') return { head: '["b","w"]', tail: '', body: message.announcement };
      if (message.type === 'tokens.revoked') {
        const { app, user, before } = message;
        const header = user === undefined ? ['b', 't', app, before] : ['b', 't', app, before, user];
        return { head: JSON.stringify(header), tail: '', body: '' };
      }
      return { head: '["b","g"]', tail: '', body: message.app };
    }
  }
  throw new TypeError('a publication of no known kind');
}

const isText = (value: unknown): value is string => typeof value === 'string';

function roomEvent(header: unknown[], data: string): RoomEvent | undefined {
  const [, id, app, room, event, from, origin] = header;
  if (!isText(app) || !isText(room) || !isText(event)) return undefined;
  const publication: RoomEvent = { kind: 'room', app, room, event, data };
  if (isText(id)) publication.id = id;
  if (isText(from)) publication.from = from;
  if (isText(origin)) publication.origin = origin;
  return publication;
}

function nodePublication(header: unknown[], body: string): Publication | undefined {
  const [, node, app, type, field] = header;
  if (!isText(node) || !isText(app)) return undefined;
  if (type === 'e') return { kind: 'node', node, app, message: { type: 'console.entry', entry: body } };
  if (!isText(field)) return undefined;
  switch (type) {
    case 'f':
      return { kind: 'node', node, app, message: { type: 'page.frame', page: field, frame: body } };
    case 's':
      return { kind: 'node', node, app, message: { type: 'service', service: field, data: body } };
    case 'r':
      return { kind: 'node', node, app, message: { type: 'ask.reply', ask: field, data: body } };
    case 'd':
      return { kind: 'node', node, app, message: { type: 'ask.decline', ask: field } };
    default:
      return undefined;
  }
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
  if (!Array.isArray(header)) return undefined;
  const body = message.slice(end + 1);
  const [kind, a, b, c, d, e] = header as unknown[];
  switch (kind) {
    case 'r':
      return roomEvent(header, body);
    case 'u':
      if (!isText(a) || !isText(b) || !isText(c)) return undefined;
      return { kind: 'user', app: a, user: b, event: c, data: body };
    case 'f': {
      if (!isText(a) || !isText(b)) return undefined;
      return isText(c)
        ? { kind: 'user.frame', app: a, user: b, frame: body, except: c }
        : { kind: 'user.frame', app: a, user: b, frame: body };
    }
    case 'c':
      if (!isText(a) || !isText(b) || typeof c !== 'number') return undefined;
      return { kind: 'user.close', app: a, user: b, code: c, reason: body };
    case 'a':
      if (!isText(a) || !isText(b) || !isText(c) || !isText(d) || !isText(e)) return undefined;
      return { kind: 'ask', app: a, user: b, ask: c, replyTo: d, event: e, data: body };
    case 'n':
      return nodePublication(header, body);
    case 'b':
      if (a === 'w') return { kind: 'broadcast', message: { type: 'console.watch', announcement: body } };
      if (a === 'g') return { kind: 'broadcast', message: { type: 'console.app_gone', app: body } };
      if (a === 't' && isText(b) && typeof c === 'number') {
        return {
          kind: 'broadcast',
          message: isText(d)
            ? { type: 'tokens.revoked', app: b, before: c, user: d }
            : { type: 'tokens.revoked', app: b, before: c },
        };
      }
      return undefined;
    default:
      return undefined;
  }
}
