import { isUtf8 } from 'node:buffer';
import { EPOCH_MAX_LENGTH, EVENT_ID_PATTERN, LIMITS, roomNameProblem } from '@realtime/protocol';
import { quote } from '../core/quote.js';
import { ApiError } from './api-error.js';
import { decodeComponent, parseQuery } from './query.js';

/**
 * The query parameters of the room reads (`GET /rooms`, `/rooms/{room}/members`, `/rooms/{room}/history`),
 * parsed strictly: each refusal is `bad_request` with one line naming the parameter.
 */

/** Items per answer when `limit` is not given, and the most one answer holds. */
export const READ_LIMIT = { default: 100, max: 1000 } as const;

/** `limit`: 1 to 1,000 in plain digits (no sign, no exponent, no leading zeros to hide a bigger number). */
export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return READ_LIMIT.default;
  const text = decodeComponent(raw, 'limit');
  if (!/^[1-9][0-9]{0,3}$/.test(text) || Number(text) > READ_LIMIT.max) {
    throw new ApiError('bad_request', `limit must be a whole number from 1 to ${READ_LIMIT.max}`);
  }
  return Number(text);
}

/** The room named by a path segment (already percent-decoded): `bad_room` as on emit. */
export function roomParam(room: string): string {
  const problem = roomNameProblem(room);
  if (problem) throw new ApiError('bad_room', `${problem}: ${quote(room)}`);
  return room;
}

// ---- GET /rooms

export interface RoomsQuery {
  prefix?: string;
  /** The last room of the page before (from its cursor). */
  after?: string;
  limit: number;
}

/** A listing cursor: the last room name answered, base64url (opaque to clients). */
export function roomsCursor(lastRoom: string): string {
  return Buffer.from(lastRoom, 'utf8').toString('base64url');
}

function roomOfCursor(cursor: string): string {
  const refused = () => new ApiError('bad_request', `cursor is not one GET /rooms gave: ${quote(cursor)}`);
  if (!/^[A-Za-z0-9_-]{1,300}$/.test(cursor)) throw refused();
  const bytes = Buffer.from(cursor, 'base64url');
  // Canonical only: one room, one cursor.
  if (!isUtf8(bytes) || bytes.toString('base64url') !== cursor) throw refused();
  const room = bytes.toString('utf8');
  if (roomNameProblem(room)) throw refused();
  return room;
}

export function parseRoomsQuery(query: string): RoomsQuery {
  const params = parseQuery(query, ['prefix', 'cursor', 'limit']);
  const parsed: RoomsQuery = { limit: parseLimit(params.get('limit')) };
  const rawPrefix = params.get('prefix');
  const prefix = rawPrefix === undefined ? '' : decodeComponent(rawPrefix, 'prefix');
  if (prefix !== '') {
    // A prefix is the start of a room name, under the same rules.
    const problem = roomNameProblem(prefix);
    if (problem) throw new ApiError('bad_request', `prefix: ${problem}: ${quote(prefix)}`);
    parsed.prefix = prefix;
  }
  const cursor = params.get('cursor');
  if (cursor !== undefined && cursor !== '') parsed.after = roomOfCursor(decodeComponent(cursor, 'cursor'));
  return parsed;
}

// ---- GET /rooms/{room}/members

export interface MembersQuery {
  /** The presence store's cursor of the page before. */
  after?: string;
  limit: number;
}

export function parseMembersQuery(query: string): MembersQuery {
  const params = parseQuery(query, ['cursor', 'limit']);
  const parsed: MembersQuery = { limit: parseLimit(params.get('limit')) };
  const raw = params.get('cursor');
  if (raw !== undefined && raw !== '') {
    const cursor = decodeComponent(raw, 'cursor');
    // Presence stores give sequence numbers (MemberPage.cursor): anything else was not given by this endpoint.
    if (!/^[0-9]{1,16}$/.test(cursor)) {
      throw new ApiError('bad_request', `cursor is not one GET /rooms/{room}/members gave: ${quote(cursor)}`);
    }
    parsed.after = cursor;
  }
  return parsed;
}

// ---- GET /rooms/{room}/history

/** Where the next page of a history read starts: after `after`, in `epoch`, with `left` events of a `last` read to go. */
export interface HistoryCursor {
  after: string;
  epoch: string;
  /** Events of a `last` read still to come; none for a `since` read (everything after). */
  left?: number;
}

export type HistoryQuery = { limit: number } & (
  | { from: 'start' }
  | { from: 'since'; since: string; epoch?: string }
  | { from: 'last'; last: number }
  | { from: 'cursor'; cursor: HistoryCursor }
);

export function historyCursor(cursor: HistoryCursor): string {
  const fields = cursor.left === undefined ? [cursor.after, cursor.epoch] : [cursor.after, cursor.epoch, cursor.left];
  return Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url');
}

function parseHistoryCursor(text: string): HistoryCursor {
  const refused = () => new ApiError('bad_request', `cursor is not one GET /rooms/{room}/history gave: ${quote(text)}`);
  if (!/^[A-Za-z0-9_-]{1,300}$/.test(text)) throw refused();
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw refused();
  }
  if (!Array.isArray(fields) || fields.length < 2 || fields.length > 3) throw refused();
  const [after, epoch, left] = fields as unknown[];
  if (typeof after !== 'string' || !EVENT_ID_PATTERN.test(after)) throw refused();
  if (typeof epoch !== 'string' || epoch === '' || epoch.length > EPOCH_MAX_LENGTH) throw refused();
  if (fields.length === 2) return { after, epoch };
  if (typeof left !== 'number' || !Number.isInteger(left) || left < 1 || left > LIMITS.historyMaxEvents) {
    throw refused();
  }
  return { after, epoch, left };
}

export function parseHistoryQuery(query: string): HistoryQuery {
  const params = parseQuery(query, ['since', 'epoch', 'last', 'cursor', 'limit']);
  const limit = parseLimit(params.get('limit'));
  const given = (name: string): string | undefined => {
    const raw = params.get(name);
    return raw === undefined ? undefined : decodeComponent(raw, name);
  };
  const since = given('since');
  const last = given('last');
  // An empty cursor is none, as on the other listings (a client may send what the last answer lacked).
  const cursor = given('cursor') || undefined;
  const epoch = given('epoch');
  const starts = [since, last, cursor].filter((value) => value !== undefined).length;
  if (starts > 1) throw new ApiError('bad_request', 'give one of since, last and cursor');
  if (epoch !== undefined) {
    if (since === undefined) throw new ApiError('bad_request', 'epoch goes with since');
    if (epoch === '' || epoch.length > EPOCH_MAX_LENGTH) {
      throw new ApiError('bad_request', `epoch must be 1 to ${EPOCH_MAX_LENGTH} characters`);
    }
  }
  if (since !== undefined) {
    if (!EVENT_ID_PATTERN.test(since)) throw new ApiError('bad_request', 'since must be an event id <ms>-<seq>');
    return epoch === undefined ? { from: 'since', since, limit } : { from: 'since', since, epoch, limit };
  }
  if (last !== undefined) {
    const max = LIMITS.historyMaxEvents;
    if (!/^[1-9][0-9]{0,3}$/.test(last) || Number(last) > max) {
      throw new ApiError('bad_request', `last must be a whole number from 1 to ${max}`);
    }
    return { from: 'last', last: Number(last), limit };
  }
  if (cursor !== undefined) return { from: 'cursor', cursor: parseHistoryCursor(cursor), limit };
  return { from: 'start', limit };
}
