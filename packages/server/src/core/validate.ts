import {
  eventNameProblem,
  type HistoryRule,
  isRecord,
  isReservedEvent,
  LIMITS,
  roomNameProblem,
  userIdProblem,
} from '@realtime/protocol';
import { ApiError, quote } from './api-error.js';

/** An emit event that passed every rule: targets de-duplicated, data encoded once. */
export interface ValidEvent {
  rooms: string[];
  users: string[];
  event: string;
  /** JSON text of `data` (null when absent). */
  data: string;
  history: Map<string, HistoryRule>;
}

const EVENT_FIELDS = new Set(['rooms', 'users', 'event', 'data', 'history']);

/** Refuses fields not in the allowed set, naming the first. */
export function refuseUnknownFields(body: Record<string, unknown>, allowed: Set<string>, at: string): void {
  for (const key of Object.keys(body)) {
    if (!allowed.has(key)) throw new ApiError('bad_request', `${at}unknown field ${quote(key)}`);
  }
}

function stringList(value: unknown, field: string, at: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ApiError('bad_request', `${at}${field} must be an array of strings`);
  for (let i = 0; i < value.length; i++) {
    if (typeof value[i] !== 'string') throw new ApiError('bad_request', `${at}${field}[${i}] must be a string`);
  }
  return value as string[];
}

/** Event names: shape first (bad_request), then the `$` prefix with the caller's code. */
export function checkEventName(value: unknown, at: string, reservedCode: 'reserved' | 'bad_event'): string {
  if (typeof value !== 'string') throw new ApiError('bad_request', `${at}event must be a string`);
  const problem = eventNameProblem(value);
  if (problem) throw new ApiError('bad_request', `${at}${problem}`);
  if (isReservedEvent(value)) {
    throw new ApiError(reservedCode, `${at}event names starting with $ are kept for rooms (${quote(value)})`);
  }
  return value;
}

/** Encodes `data` once and checks its size. `sentBytes` is its size as sent, when measured. */
export function encodeData(value: unknown, at: string, sentBytes?: number): string {
  if (sentBytes !== undefined && sentBytes > LIMITS.dataBytes) {
    throw new ApiError('too_large', `${at}data is over ${LIMITS.dataBytes} bytes`);
  }
  if (value === undefined) return 'null';
  try {
    return JSON.stringify(value);
  } catch {
    // JSON.stringify recurses: data nested a million deep overflows the stack.
    throw new ApiError('bad_request', `${at}data is nested too deeply`);
  }
}

function historyRules(value: unknown, rooms: Set<string>, at: string): Map<string, HistoryRule> {
  const rules = new Map<string, HistoryRule>();
  if (value === undefined) return rules;
  if (!isRecord(value)) throw new ApiError('bad_request', `${at}history must be an object of room to [limit, hours]`);
  for (const [room, rule] of Object.entries(value)) {
    const where = `${at}history[${quote(room)}]`;
    if (!rooms.has(room)) throw new ApiError('bad_request', `${where}: the room is not one of the event's rooms`);
    if (!Array.isArray(rule) || rule.length !== 2) {
      throw new ApiError('bad_request', `${where} must be [limit, hours]`);
    }
    const [limit, hours] = rule as unknown[];
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIMITS.historyMaxEvents) {
      throw new ApiError('bad_request', `${where}: limit must be a whole number from 1 to ${LIMITS.historyMaxEvents}`);
    }
    if (typeof hours !== 'number' || !Number.isFinite(hours) || hours <= 0 || hours > LIMITS.historyMaxHours) {
      throw new ApiError(
        'bad_request',
        `${where}: hours must be a number above 0 and at most ${LIMITS.historyMaxHours}`,
      );
    }
    rules.set(room, [limit, hours]);
  }
  return rules;
}

/**
 * Checks one event to send (section 2.1 and decisions.md). `at` prefixes messages (`events[3]: `).
 * Order: shape, counts, room names, user ids, event name, data size, history.
 */
export function validateEvent(raw: unknown, at: string, dataSentBytes?: number): ValidEvent {
  if (!isRecord(raw)) throw new ApiError('bad_request', `${at}the event must be a JSON object`);
  refuseUnknownFields(raw, EVENT_FIELDS, at);
  const rooms = stringList(raw.rooms, 'rooms', at);
  const users = stringList(raw.users, 'users', at);
  if (rooms.length === 0 && users.length === 0) {
    throw new ApiError('bad_request', `${at}rooms or users must be a non-empty array`);
  }
  if (rooms.length + users.length > LIMITS.targetsPerEvent) {
    throw new ApiError('too_many', `${at}more than ${LIMITS.targetsPerEvent} rooms and users in one event`);
  }
  for (const room of rooms) {
    const problem = roomNameProblem(room);
    if (problem) throw new ApiError('bad_room', `${at}${problem}: ${quote(room)}`);
  }
  for (const user of users) {
    const problem = userIdProblem(user);
    if (problem) throw new ApiError('bad_request', `${at}${problem}: ${quote(user)}`);
  }
  const event = checkEventName(raw.event, at, 'reserved');
  const data = encodeData(raw.data, at, dataSentBytes);
  const roomSet = new Set(rooms);
  const history = historyRules(raw.history, roomSet, at);
  return { rooms: [...roomSet], users: [...new Set(users)], event, data, history };
}
