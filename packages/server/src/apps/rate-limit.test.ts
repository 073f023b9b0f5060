import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limit.js';

const T0 = 1_700_000_000_000;

/** Takes `count` tokens at `nowMs`; returns the answers. */
function takeMany(
  limiter: RateLimiter,
  app: string,
  limit: { perSecond: number; burst: number },
  count: number,
  nowMs: number,
) {
  return Array.from({ length: count }, () => limiter.take(app, limit, nowMs));
}

describe('RateLimiter', () => {
  it('allows a burst at once, then refuses', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 10, burst: 5 };
    expect(takeMany(limiter, 'app1', limit, 5, T0)).toEqual([0, 0, 0, 0, 0]);
    expect(limiter.take('app1', limit, T0)).toBeGreaterThan(0);
  });

  it('refills at perSecond', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 10, burst: 5 };
    takeMany(limiter, 'app1', limit, 5, T0);
    expect(limiter.take('app1', limit, T0 + 99)).toBeGreaterThan(0);
    expect(limiter.take('app1', limit, T0 + 100)).toBe(0);
    expect(limiter.take('app1', limit, T0 + 100)).toBeGreaterThan(0);
    // Half a second later: five more.
    expect(takeMany(limiter, 'app1', limit, 5, T0 + 600)).toEqual([0, 0, 0, 0, 0]);
    expect(limiter.take('app1', limit, T0 + 600)).toBeGreaterThan(0);
  });

  it('never holds more than the burst, however long it was idle', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 100, burst: 3 };
    limiter.take('app1', limit, T0);
    const later = T0 + 3_600_000;
    expect(takeMany(limiter, 'app1', limit, 3, later)).toEqual([0, 0, 0]);
    expect(limiter.take('app1', limit, later)).toBeGreaterThan(0);
  });

  it('does not charge refused requests', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 1, burst: 1 };
    expect(limiter.take('app1', limit, T0)).toBe(0);
    for (let i = 0; i < 50; i++) expect(limiter.take('app1', limit, T0 + i * 10)).toBeGreaterThan(0);
    expect(limiter.take('app1', limit, T0 + 1000)).toBe(0);
  });

  it('answers the whole seconds until a token is there, at least 1', () => {
    const limiter = new RateLimiter();
    const slow = { perSecond: 0.1, burst: 1 };
    expect(limiter.take('slow', slow, T0)).toBe(0);
    expect(limiter.take('slow', slow, T0)).toBe(10);
    expect(limiter.take('slow', slow, T0 + 2500)).toBe(8);
    expect(limiter.take('slow', slow, T0 + 9999)).toBe(1);
    expect(limiter.take('slow', slow, T0 + 10_000)).toBe(0);
    const fast = { perSecond: 1000, burst: 1 };
    expect(limiter.take('fast', fast, T0)).toBe(0);
    expect(limiter.take('fast', fast, T0)).toBe(1);
  });

  it('keeps apps apart', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 1, burst: 2 };
    expect(takeMany(limiter, 'app1', limit, 2, T0)).toEqual([0, 0]);
    expect(limiter.take('app1', limit, T0)).toBeGreaterThan(0);
    expect(takeMany(limiter, 'app2', limit, 2, T0)).toEqual([0, 0]);
    expect(limiter.take('app2', limit, T0)).toBeGreaterThan(0);
  });

  it("applies each app's own limit", () => {
    const limiter = new RateLimiter();
    expect(takeMany(limiter, 'small', { perSecond: 1, burst: 1 }, 2, T0)).toEqual([0, 1]);
    expect(takeMany(limiter, 'big', { perSecond: 1, burst: 100 }, 101, T0).filter((wait) => wait === 0)).toHaveLength(
      100,
    );
  });

  it('takes a changed limit at once: a smaller burst caps what is left', () => {
    const limiter = new RateLimiter();
    expect(limiter.take('app1', { perSecond: 1, burst: 100 }, T0)).toBe(0);
    const smaller = { perSecond: 1, burst: 2 };
    expect(takeMany(limiter, 'app1', smaller, 3, T0 + 1)).toEqual([0, 0, 1]);
  });

  it('refuses with a minute to wait when the rate is 0 and the burst is spent', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 0, burst: 2 };
    expect(takeMany(limiter, 'app1', limit, 2, T0)).toEqual([0, 0]);
    expect(limiter.take('app1', limit, T0 + 3_600_000)).toBe(60);
    expect(limiter.take('none', { perSecond: 0, burst: 0 }, T0)).toBe(60);
  });

  it('does not take tokens away when the clock steps back', () => {
    const limiter = new RateLimiter();
    const limit = { perSecond: 1, burst: 3 };
    expect(limiter.take('app1', limit, T0)).toBe(0);
    // The clock steps back ten seconds: two tokens are still there.
    expect(takeMany(limiter, 'app1', limit, 2, T0 - 10_000)).toEqual([0, 0]);
    expect(limiter.take('app1', limit, T0 - 10_000)).toBeGreaterThan(0);
    // Refilling goes on from the time the clock stepped back to.
    expect(limiter.take('app1', limit, T0 - 9500)).toBeGreaterThan(0);
    expect(limiter.take('app1', limit, T0 - 9000)).toBe(0);
  });

  it('lets a request through once the wait it answered has passed', () => {
    fc.assert(
      fc.property(
        fc.record({
          perSecond: fc.double({ min: 0.01, max: 1000, noNaN: true }),
          burst: fc.integer({ min: 1, max: 50 }),
        }),
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 60 }),
        (limit, gaps) => {
          const limiter = new RateLimiter();
          let now = T0;
          for (const gap of gaps) {
            now += gap;
            const wait = limiter.take('app1', limit, now);
            expect(Number.isInteger(wait)).toBe(true);
            expect(wait).toBeGreaterThanOrEqual(0);
            if (wait > 0) {
              now += wait * 1000;
              expect(limiter.take('app1', limit, now)).toBe(0);
            }
          }
        },
      ),
    );
  });

  it('never allows more than the burst plus what the rate refilled', () => {
    fc.assert(
      fc.property(
        fc.record({ perSecond: fc.integer({ min: 1, max: 100 }), burst: fc.integer({ min: 1, max: 20 }) }),
        fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 300 }),
        (limit, gaps) => {
          const limiter = new RateLimiter();
          let now = T0;
          let allowed = 0;
          for (const gap of gaps) {
            now += gap;
            if (limiter.take('app1', limit, now) === 0) allowed++;
          }
          expect(allowed).toBeLessThanOrEqual(limit.burst + ((now - T0) / 1000) * limit.perSecond + 1e-9);
        },
      ),
    );
  });
});
