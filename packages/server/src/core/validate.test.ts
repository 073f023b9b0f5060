import { describe, expect, it } from 'vitest';
import type { Checked, Problem } from './problem.js';
import { checkEventName, encodeData, unknownField, validateEvent } from './validate.js';

function problemOf<T>(checked: Checked<T>): Problem | undefined {
  return checked.ok ? undefined : checked.problem;
}

/** Data nested deeper than JSON.stringify can recurse. */
function deeplyNested(levels: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

const ok = { rooms: ['lobby'], event: 'chat' };

// Each event, the problem it gets; the messages are what the API answers, byte for byte.
const BAD_EVENTS: [string, unknown, Problem][] = [
  ['not an object', [1], { code: 'bad_request', message: 'the event must be a JSON object' }],
  ['an unknown field', { ...ok, room: 'x' }, { code: 'bad_request', message: 'unknown field "room"' }],
  [
    'rooms not an array',
    { ...ok, rooms: 'lobby' },
    { code: 'bad_request', message: 'rooms must be an array of strings' },
  ],
  ['a room not a string', { ...ok, rooms: ['a', 2] }, { code: 'bad_request', message: 'rooms[1] must be a string' }],
  ['users not an array', { ...ok, users: {} }, { code: 'bad_request', message: 'users must be an array of strings' }],
  ['a user not a string', { ...ok, users: [null] }, { code: 'bad_request', message: 'users[0] must be a string' }],
  [
    'no target',
    { rooms: [], users: [], event: 'chat' },
    { code: 'bad_request', message: 'rooms or users must be a non-empty array' },
  ],
  [
    'too many targets',
    { rooms: Array.from({ length: 600 }, (_, i) => `r${i}`), users: Array.from({ length: 401 }, (_, i) => `u${i}`) },
    { code: 'too_many', message: 'more than 1000 rooms and users in one event' },
  ],
  [
    'a $ room',
    { ...ok, rooms: ['$system'] },
    { code: 'bad_room', message: 'room names starting with $ are kept for the service: "$system"' },
  ],
  ['an empty room', { ...ok, rooms: [''] }, { code: 'bad_room', message: 'room name is empty: ""' }],
  [
    'a long room',
    { ...ok, rooms: ['r'.repeat(201)] },
    { code: 'bad_room', message: `room name is longer than 200 bytes: "${'r'.repeat(36)}...` },
  ],
  [
    'a control character in a user',
    { ...ok, users: ['a\nb'] },
    { code: 'bad_request', message: 'user id holds a control character: "a\\nb"' },
  ],
  ['no event', { rooms: ['lobby'] }, { code: 'bad_request', message: 'event must be a string' }],
  ['an empty event', { ...ok, event: '' }, { code: 'bad_request', message: 'event name is empty' }],
  [
    'a $ event',
    { ...ok, event: '$member.joined' },
    { code: 'reserved', message: 'event names starting with $ are kept for rooms ("$member.joined")' },
  ],
  [
    'data nested too deeply',
    { ...ok, data: deeplyNested(200_000) },
    { code: 'bad_request', message: 'data is nested too deeply' },
  ],
  [
    'history not an object',
    { ...ok, history: [] },
    { code: 'bad_request', message: 'history must be an object of room to [limit, hours]' },
  ],
  [
    'history for another room',
    { ...ok, history: { other: [10, 1] } },
    { code: 'bad_request', message: `history["other"]: the room is not one of the event's rooms` },
  ],
  [
    'a history rule not a pair',
    { ...ok, history: { lobby: [10] } },
    { code: 'bad_request', message: 'history["lobby"] must be [limit, hours]' },
  ],
  [
    'a history limit of 0',
    { ...ok, history: { lobby: [0, 1] } },
    { code: 'bad_request', message: 'history["lobby"]: limit must be a whole number from 1 to 1000' },
  ],
  [
    'a history limit not whole',
    { ...ok, history: { lobby: [1.5, 1] } },
    { code: 'bad_request', message: 'history["lobby"]: limit must be a whole number from 1 to 1000' },
  ],
  [
    'history hours over the maximum',
    { ...ok, history: { lobby: [10, 169] } },
    { code: 'bad_request', message: 'history["lobby"]: hours must be a number above 0 and at most 168' },
  ],
  [
    'history hours of 0',
    { ...ok, history: { lobby: [10, 0] } },
    { code: 'bad_request', message: 'history["lobby"]: hours must be a number above 0 and at most 168' },
  ],
];

describe('validateEvent', () => {
  it.each(BAD_EVENTS)('refuses %s', (_, raw, problem) => {
    expect(problemOf(validateEvent(raw, ''))).toEqual(problem);
  });

  it('prefixes every message with where the event is', () => {
    expect(problemOf(validateEvent({ ...ok, event: '$x' }, 'events[3]: '))).toEqual({
      code: 'reserved',
      message: 'events[3]: event names starting with $ are kept for rooms ("$x")',
    });
  });

  it('refuses data over the limit as sent, before encoding it', () => {
    expect(problemOf(validateEvent({ ...ok, data: 'small' }, '', 1_048_577))).toEqual({
      code: 'too_large',
      message: 'data is over 1048576 bytes',
    });
    expect(validateEvent({ ...ok, data: 'small' }, '', 1_048_576).ok).toBe(true);
  });

  it('checks in order: the first problem is the one answered', () => {
    // A bad room, a $ event and bad history: the room comes first.
    const raw = { rooms: ['$x'], event: '$y', history: [] };
    expect(problemOf(validateEvent(raw, ''))?.code).toBe('bad_room');
  });

  it('accepts an event: targets de-duplicated, data encoded once, history rules read', () => {
    const checked = validateEvent(
      { rooms: ['a', 'b', 'a'], users: ['u', 'u'], event: 'chat', data: { n: 1 }, history: { b: [10, 2.5] } },
      '',
    );
    expect(checked).toEqual({
      ok: true,
      value: { rooms: ['a', 'b'], users: ['u'], event: 'chat', data: '{"n":1}', history: new Map([['b', [10, 2.5]]]) },
    });
  });

  it('encodes absent data as null', () => {
    const checked = validateEvent(ok, '');
    expect(checked.ok && checked.value.data).toBe('null');
  });
});

describe('checkEventName', () => {
  it('refuses a $ name with the code the caller gives', () => {
    expect(problemOf(checkEventName('$x', '', 'bad_event'))).toEqual({
      code: 'bad_event',
      message: 'event names starting with $ are kept for rooms ("$x")',
    });
  });

  it('refuses a name too long', () => {
    expect(problemOf(checkEventName('e'.repeat(101), '', 'bad_event'))).toEqual({
      code: 'bad_request',
      message: 'event name is longer than 100 bytes',
    });
  });

  it('accepts a name', () => {
    expect(checkEventName('chat', '', 'bad_event')).toEqual({ ok: true, value: 'chat' });
  });
});

describe('encodeData', () => {
  it('encodes once, or refuses what cannot be encoded', () => {
    expect(encodeData([1, 'a'], '')).toEqual({ ok: true, value: '[1,"a"]' });
    expect(problemOf(encodeData(deeplyNested(200_000), 'ring: '))).toEqual({
      code: 'bad_request',
      message: 'ring: data is nested too deeply',
    });
  });
});

describe('unknownField', () => {
  it('names the first field not allowed, or finds none', () => {
    const allowed = new Set(['event', 'data']);
    expect(unknownField({ event: 'x', timeout: 1, all: true }, allowed, '')?.problem).toEqual({
      code: 'bad_request',
      message: 'unknown field "timeout"',
    });
    expect(unknownField({ event: 'x' }, allowed, '')).toBeUndefined();
  });
});
