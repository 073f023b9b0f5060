import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareEventIds, type EventId, formatEventId, nextEventId, parseEventId } from './event-id.js';

/** Numbers of at most 15 digits: the range parseEventId accepts. */
const part = fc.integer({ min: 0, max: 999_999_999_999_999 });
const eventId = fc.record({ ms: part, seq: part });

describe('formatEventId and parseEventId', () => {
  it('writes <ms>-<seq>', () => {
    expect(formatEventId({ ms: 1_700_000_000_000, seq: 0 })).toBe('1700000000000-0');
    expect(formatEventId({ ms: 0, seq: 12 })).toBe('0-12');
  });

  it('round-trips every id', () => {
    fc.assert(
      fc.property(eventId, (id) => {
        const text = formatEventId(id);
        expect(text).toMatch(/^\d+-\d+$/);
        expect(parseEventId(text)).toEqual(id);
      }),
    );
  });

  it('reads the largest parts it allows', () => {
    expect(parseEventId('999999999999999-999999999999999')).toEqual({
      ms: 999_999_999_999_999,
      seq: 999_999_999_999_999,
    });
    expect(parseEventId('0-0')).toEqual({ ms: 0, seq: 0 });
  });

  it.each([
    '',
    '-',
    '1',
    '1-',
    '-1',
    '--1',
    '1--1',
    '1-2-3',
    'a-1',
    '1-a',
    ' 1-2',
    '1-2 ',
    '1 -2',
    '+1-2',
    '1-+2',
    '-1-2',
    '1.5-2',
    '1-2.0',
    '1e3-0',
    '0x1-0',
    '١-٢',
    '1\u00a0-2',
    '1-2\n',
    '1000000000000000-0',
    '0-1000000000000000',
    '99999999999999999999-1',
  ])('refuses %j', (text) => {
    expect(parseEventId(text)).toBeUndefined();
  });

  it('refuses anything that is not digits, one dash, digits', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('0', '1', '9', '-', '+', ' ', '.', 'e', 'x', '١') }), (text) => {
        const parsed = parseEventId(text);
        const shaped = /^(\d{1,15})-(\d{1,15})$/.exec(text);
        if (!shaped) {
          expect(parsed).toBeUndefined();
        } else {
          expect(parsed).toEqual({ ms: Number(shaped[1]), seq: Number(shaped[2]) });
        }
      }),
    );
  });
});

describe('nextEventId', () => {
  it('starts a room at the clock, with seq 0', () => {
    expect(nextEventId(undefined, 1000)).toEqual({ ms: 1000, seq: 0 });
  });

  it('follows the clock when it moved on', () => {
    expect(nextEventId({ ms: 1000, seq: 7 }, 1001)).toEqual({ ms: 1001, seq: 0 });
  });

  it('counts up within the same millisecond', () => {
    expect(nextEventId({ ms: 1000, seq: 7 }, 1000)).toEqual({ ms: 1000, seq: 8 });
  });

  it('counts up on the last id when the clock stepped back', () => {
    expect(nextEventId({ ms: 1000, seq: 7 }, 400)).toEqual({ ms: 1000, seq: 8 });
  });

  it('gives strictly rising ids for any clock, and the clock time whenever the clock is ahead', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 200 }), (clock) => {
        let last: EventId | undefined;
        for (const now of clock) {
          const next = nextEventId(last, now);
          if (last) expect(compareEventIds(last, next)).toBeLessThan(0);
          if (!last || now > last.ms) expect(next).toEqual({ ms: now, seq: 0 });
          expect(next.ms).toBeGreaterThanOrEqual(now);
          last = next;
        }
      }),
    );
  });
});

describe('compareEventIds', () => {
  it('orders by ms, then by seq, as numbers', () => {
    expect(compareEventIds({ ms: 9, seq: 0 }, { ms: 10, seq: 0 })).toBeLessThan(0);
    expect(compareEventIds({ ms: 10, seq: 2 }, { ms: 10, seq: 10 })).toBeLessThan(0);
    expect(compareEventIds({ ms: 10, seq: 999 }, { ms: 11, seq: 0 })).toBeLessThan(0);
    expect(compareEventIds({ ms: 11, seq: 0 }, { ms: 10, seq: 999 })).toBeGreaterThan(0);
    expect(compareEventIds({ ms: 10, seq: 3 }, { ms: 10, seq: 3 })).toBe(0);
  });

  it('agrees with ordering the pairs, and is antisymmetric', () => {
    fc.assert(
      fc.property(eventId, eventId, (a, b) => {
        const expected = a.ms !== b.ms ? Math.sign(a.ms - b.ms) : Math.sign(a.seq - b.seq);
        expect(Math.sign(compareEventIds(a, b))).toBe(expected);
        expect(Math.sign(compareEventIds(b, a))).toBe(-expected);
      }),
    );
  });

  it('sorts ids the way they were given', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 100 }), (clock) => {
        const given: EventId[] = [];
        for (const now of clock) given.push(nextEventId(given.at(-1), now));
        const shuffled = [...given].reverse().sort(compareEventIds);
        expect(shuffled).toEqual(given);
      }),
    );
  });
});
