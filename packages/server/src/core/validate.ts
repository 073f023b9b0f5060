import {
  eventNameProblem,
  type HistoryRule,
  isRecord,
  isReservedEvent,
  LIMITS,
  roomNameProblem,
  userIdProblem,
} from '@realtime/protocol';
import { accepted, type Checked, type Refused, refused } from './problem.js';
import { quote } from './quote.js';

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

/** Refuses the first field not in the allowed set, naming it; undefined when every field is allowed. */
export function unknownField(body: Record<string, unknown>, allowed: Set<string>, at: string): Refused | undefined {
  for (const key of Object.keys(body)) {
    if (!allowed.has(key)) return refused('bad_request', `${at}unknown field ${quote(key)}`);
  }
  return undefined;
}

function stringList(value: unknown, field: string, at: string): Checked<string[]> {
  if (value === undefined) return accepted([]);
  if (!Array.isArray(value)) return refused('bad_request', `${at}${field} must be an array of strings`);
  for (let i = 0; i < value.length; i++) {
    if (typeof value[i] !== 'string') return refused('bad_request', `${at}${field}[${i}] must be a string`);
  }
  return accepted(value as string[]);
}

/** Event names: shape first (bad_request), then the `$` prefix with the caller's code. */
export function checkEventName(value: unknown, at: string, reservedCode: 'reserved' | 'bad_event'): Checked<string> {
  if (typeof value !== 'string') return refused('bad_request', `${at}event must be a string`);
  const problem = eventNameProblem(value);
  if (problem) return refused('bad_request', `${at}${problem}`);
  if (isReservedEvent(value)) {
    return refused(reservedCode, `${at}event names starting with $ are kept for rooms (${quote(value)})`);
  }
  return accepted(value);
}

/** Encodes `data` once and checks its size. `sentBytes` is its size as sent, when measured. */
export function encodeData(value: unknown, at: string, sentBytes?: number): Checked<string> {
  if (sentBytes !== undefined && sentBytes > LIMITS.dataBytes) {
    return refused('too_large', `${at}data is over ${LIMITS.dataBytes} bytes`);
  }
  if (value === undefined) return accepted('null');
  try {
    return accepted(JSON.stringify(value));
  } catch {
    // JSON.stringify recurses: data nested a million deep overflows the stack.
    return refused('bad_request', `${at}data is nested too deeply`);
  }
}

function historyRules(value: unknown, rooms: Set<string>, at: string): Checked<Map<string, HistoryRule>> {
  const rules = new Map<string, HistoryRule>();
  if (value === undefined) return accepted(rules);
  if (!isRecord(value)) return refused('bad_request', `${at}history must be an object of room to [limit, hours]`);
  for (const [room, rule] of Object.entries(value)) {
    const where = `${at}history[${quote(room)}]`;
    if (!rooms.has(room)) return refused('bad_request', `${where}: the room is not one of the event's rooms`);
    if (!Array.isArray(rule) || rule.length !== 2) return refused('bad_request', `${where} must be [limit, hours]`);
    const [limit, hours] = rule as unknown[];
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIMITS.historyMaxEvents) {
      return refused('bad_request', `${where}: limit must be a whole number from 1 to ${LIMITS.historyMaxEvents}`);
    }
    if (typeof hours !== 'number' || !Number.isFinite(hours) || hours <= 0 || hours > LIMITS.historyMaxHours) {
      return refused('bad_request', `${where}: hours must be a number above 0 and at most ${LIMITS.historyMaxHours}`);
    }
    rules.set(room, [limit, hours]);
  }
  return accepted(rules);
}

/**
 * Checks one event to send (section 2.1 and decisions.md). `at` prefixes messages (`events[3]: `).
 * Order: shape, counts, room names, user ids, event name, data size, history.
 */
export function validateEvent(raw: unknown, at: string, dataSentBytes?: number): Checked<ValidEvent> {
  if (!isRecord(raw)) return refused('bad_request', `${at}the event must be a JSON object`);
  const unknown = unknownField(raw, EVENT_FIELDS, at);
  if (unknown) return unknown;
  const rooms = stringList(raw.rooms, 'rooms', at);
  if (!rooms.ok) return rooms;
  const users = stringList(raw.users, 'users', at);
  if (!users.ok) return users;
  if (rooms.value.length === 0 && users.value.length === 0) {
    return refused('bad_request', `${at}rooms or users must be a non-empty array`);
  }
  if (rooms.value.length + users.value.length > LIMITS.targetsPerEvent) {
    return refused('too_many', `${at}more than ${LIMITS.targetsPerEvent} rooms and users in one event`);
  }
  for (const room of rooms.value) {
    const problem = roomNameProblem(room);
    if (problem) return refused('bad_room', `${at}${problem}: ${quote(room)}`);
  }
  for (const user of users.value) {
    const problem = userIdProblem(user);
    if (problem) return refused('bad_request', `${at}${problem}: ${quote(user)}`);
  }
  const event = checkEventName(raw.event, at, 'reserved');
  if (!event.ok) return event;
  const data = encodeData(raw.data, at, dataSentBytes);
  if (!data.ok) return data;
  const roomSet = new Set(rooms.value);
  const history = historyRules(raw.history, roomSet, at);
  if (!history.ok) return history;
  return accepted({
    rooms: [...roomSet],
    users: [...new Set(users.value)],
    event: event.value,
    data: data.value,
    history: history.value,
  });
}
