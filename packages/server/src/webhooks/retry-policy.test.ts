import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMINGS, nextTryAt } from './retry-policy.js';

const HOUR = 3_600_000;

describe('retry schedule', () => {
  it('tries at 0, then 30 s, 2, 10, 30 min, 1, 2, 4, 8 h after each failed try, then gives up', () => {
    let now = 0;
    const tries = [now];
    for (let failed = 1; ; failed++) {
      const next = nextTryAt(DEFAULT_TIMINGS, failed, 0, now);
      if (next === null) break;
      now = next;
      tries.push(now);
    }
    expect(tries.slice(1).map((t, i) => t - (tries[i] as number))).toEqual([
      30_000,
      120_000,
      600_000,
      1_800_000,
      HOUR,
      2 * HOUR,
      4 * HOUR,
      8 * HOUR,
    ]);
    expect(tries).toHaveLength(9);
    // The ninth try is about 15 h 43 min after the first.
    expect(Math.round((tries.at(-1) as number) / 60_000)).toBe(15 * 60 + 43);
  });

  it('plans no try past 24 hours after the first: the batch is given up instead', () => {
    // Tries ran late (the service was down): the eighth failure came 20 h after the first try.
    expect(nextTryAt(DEFAULT_TIMINGS, 8, 0, 20 * HOUR)).toBeNull();
    // After the seventh failure the next try is 4 h later: planned only if that is within 24 h.
    expect(nextTryAt(DEFAULT_TIMINGS, 7, 0, 20 * HOUR + 1)).toBeNull();
    expect(nextTryAt(DEFAULT_TIMINGS, 7, 0, 20 * HOUR)).toBe(24 * HOUR);
    const short = { ...DEFAULT_TIMINGS, retryDelaysMs: [100, 100, 2500], giveUpMs: 1000 };
    expect(nextTryAt(short, 2, 0, 200)).toBe(300);
    expect(nextTryAt(short, 3, 0, 300)).toBeNull();
  });
});
