import { describe, expect, it } from 'vitest';
import { compareEventIds, compareEventIdTexts, formatEventId, isNewerEventId, parseEventId } from './index.js';

describe('event ids', () => {
  it('parses and formats <ms>-<seq> in safe range only', () => {
    expect(parseEventId('1700000000000-3')).toEqual({ ms: 1_700_000_000_000, seq: 3 });
    expect(formatEventId({ ms: 5, seq: 0 })).toBe('5-0');
    for (const bad of ['', '-1', '1-', '1-a', 'a-1', '1234567890123456-0', '1--2'])
      expect(parseEventId(bad)).toBe(undefined);
  });

  it('compares parsed ids and written ids the same way', () => {
    const ids = ['1-0', '1-1', '2-0', '10-0', '10-10'];
    for (const a of ids) {
      for (const b of ids) {
        const x = parseEventId(a);
        const y = parseEventId(b);
        if (!x || !y) throw new Error('unparsed');
        expect(Math.sign(compareEventIdTexts(a, b) ?? Number.NaN)).toBe(Math.sign(compareEventIds(x, y)));
      }
    }
  });

  it('compares written ids of any length, and knows a new one', () => {
    expect(compareEventIdTexts('99999999999999999999-1', '99999999999999999999-0')).toBeGreaterThan(0);
    expect(compareEventIdTexts('010-0', '10-0')).toBe(0);
    expect(compareEventIdTexts('x', '1-0')).toBe(undefined);
    expect(isNewerEventId('1-1', '1-0')).toBe(true);
    expect(isNewerEventId('1-0', '1-0')).toBe(false);
    expect(isNewerEventId('odd', '1-0')).toBe(true);
    expect(isNewerEventId('odd', 'odd')).toBe(false);
    expect(isNewerEventId('0-0', undefined)).toBe(true);
  });
});
