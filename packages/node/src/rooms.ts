import type { Member } from '@realtime/protocol';
import { field, isBoolean, isNumber, isRecord } from './answers.js';
import { apiPath, encodeQuery } from './paths.js';
import type { ApiAnswer, Transport } from './request.js';

/** Options of {@link Realtime.rooms}. */
export interface RoomsOptions {
  /** Only rooms whose name starts with it. */
  prefix?: string | undefined;
  /** The `cursor` of the previous page. */
  cursor?: string | undefined;
  /** Rooms per page, 1 to 1,000; default 100. */
  limit?: number | undefined;
}

/** An occupied room of a {@link RoomsPage}. */
export interface OccupiedRoom {
  room: string;
  /** Pages seated in the room, on every node. */
  pages: number;
  /** Presence members of the room, each user once. */
  users: number;
}

/** One page of occupied rooms, by name; `cursor` is set when more follow. */
export interface RoomsPage {
  rooms: OccupiedRoom[];
  cursor?: string;
}

/** One room now, over every node ({@link Realtime.room}). */
export interface RoomInfo {
  room: string;
  /** Pages seated in the room. */
  pages: number;
  /** Presence members, each user once. */
  users: number;
  /** Events the room keeps now. */
  kept: number;
  /** The stream the room's event ids belong to (what `joined` gives pages). */
  epoch: string;
}

/** Options of {@link Realtime.members}. */
export interface MembersOptions {
  /** The `cursor` of the previous page. */
  cursor?: string | undefined;
  /** Members per page, 1 to 1,000; default 100. */
  limit?: number | undefined;
}

/** One page of a presence room's members in join order; `cursor` is set when more may follow. */
export interface MembersPage {
  room: string;
  /** Members of the room now. */
  count: number;
  members: Member[];
  cursor?: string;
}

/**
 * Options of {@link Realtime.history}: at most one of `last` (the newest n), `since` (every kept
 * event after an id, with its `epoch` when known) and `cursor` (the next page of an earlier read);
 * none reads from the oldest kept event.
 */
export interface HistoryOptions {
  last?: number | undefined;
  since?: string | undefined;
  epoch?: string | undefined;
  cursor?: string | undefined;
  /** Events per page, 1 to 1,000; default 100 (and about 1 MB of data at most). */
  limit?: number | undefined;
}

/** A kept event, as pages get it in a replay. */
export interface HistoryEvent {
  id: string;
  event: string;
  /** The user whose page sent it (page sends only). */
  from?: string;
  /** As stored: sealed data stays sealed (open it with {@link Realtime.open}). */
  data: unknown;
}

/** One page of a room's kept events, oldest first; `cursor` is set when the read has more. */
export interface HistoryPage {
  room: string;
  epoch: string;
  /** Events of the read are missing (docs/api.md, the history read). */
  truncated: boolean;
  events: HistoryEvent[];
  cursor?: string;
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

/** The answer's `cursor`, when it has one. */
function cursorOf(answer: ApiAnswer): { cursor?: string } {
  if (answer.cursor === undefined) return {};
  return { cursor: field(answer, 'cursor', isString, 'a string') };
}

function isOccupiedRoom(value: unknown): value is OccupiedRoom {
  return isRecord(value) && isString(value.room) && isNumber(value.pages) && isNumber(value.users);
}

function isMember(value: unknown): value is Member {
  return isRecord(value) && isString(value.user) && (value.info === undefined || isRecord(value.info));
}

function isHistoryEvent(value: unknown): value is HistoryEvent {
  return (
    isRecord(value) &&
    isString(value.id) &&
    isString(value.event) &&
    (value.from === undefined || isString(value.from)) &&
    'data' in value
  );
}

function arrayOf<T>(check: (item: unknown) => item is T): (value: unknown) => value is T[] {
  return (value): value is T[] => Array.isArray(value) && value.every(check);
}

function checkOptions(options: unknown, what: string): void {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`${what}() takes an options object`);
  }
}

export async function listRooms(transport: Transport, options: RoomsOptions = {}): Promise<RoomsPage> {
  checkOptions(options, 'rooms');
  const query = encodeQuery({ prefix: options.prefix, cursor: options.cursor, limit: options.limit });
  const answer = await transport.signedRequest('GET', `${apiPath('rooms')}${query}`);
  return { rooms: field(answer, 'rooms', arrayOf(isOccupiedRoom), 'an array of rooms'), ...cursorOf(answer) };
}

export async function readRoom(transport: Transport, room: string): Promise<RoomInfo> {
  const answer = await transport.signedRequest('GET', apiPath('rooms', room));
  return {
    room: field(answer, 'room', isString, 'a string'),
    pages: field(answer, 'pages', isNumber, 'a number'),
    users: field(answer, 'users', isNumber, 'a number'),
    kept: field(answer, 'kept', isNumber, 'a number'),
    epoch: field(answer, 'epoch', isString, 'a string'),
  };
}

export async function readMembers(
  transport: Transport,
  room: string,
  options: MembersOptions = {},
): Promise<MembersPage> {
  checkOptions(options, 'members');
  const query = encodeQuery({ cursor: options.cursor, limit: options.limit });
  const answer = await transport.signedRequest('GET', `${apiPath('rooms', room, 'members')}${query}`);
  return {
    room: field(answer, 'room', isString, 'a string'),
    count: field(answer, 'count', isNumber, 'a number'),
    members: field(answer, 'members', arrayOf(isMember), 'an array of members'),
    ...cursorOf(answer),
  };
}

export async function readHistory(
  transport: Transport,
  room: string,
  options: HistoryOptions = {},
): Promise<HistoryPage> {
  checkOptions(options, 'history');
  const { last, since, epoch, cursor, limit } = options;
  const query = encodeQuery({ since, epoch, last, cursor, limit });
  const answer = await transport.signedRequest('GET', `${apiPath('rooms', room, 'history')}${query}`);
  const events = field(answer, 'events', arrayOf(isHistoryEvent), 'an array of kept events');
  return {
    room: field(answer, 'room', isString, 'a string'),
    epoch: field(answer, 'epoch', isString, 'a string'),
    truncated: field(answer, 'truncated', isBoolean, 'a boolean'),
    events,
    ...cursorOf(answer),
  };
}
