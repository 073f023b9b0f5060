import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryLimitStore } from '../engines/memory/limits.js';
import { StoreError } from '../engines/store-error.js';
import type { LimitStore, RateLimit } from '../engines/types.js';
import { RateLimiter } from './rate-limit.js';

const T0 = 1_700_000_000_000;

interface SyncLimiter {
  take(app: string, limit: RateLimit, nowMs: number): number;
}

/** A limiter on the embedded engine's store, which must answer at once: no promise per request. */
function newLimiter(): SyncLimiter {
  const limiter = new RateLimiter(new MemoryLimitStore());
  return {
    take: (app, limit, nowMs) => {
      const wait = limiter.take(app, limit, nowMs);
      if (typeof wait !== 'number') throw new Error('the memory store answered later');
      return wait;
    },
  };
}

/** Takes `count` tokens at `nowMs`; returns the answers. */
function takeMany(
  limiter: SyncLimiter,
  app: string,
  limit: { perSecond: number; burst: number },
  count: number,
  nowMs: number,
) {
  return Array.from({ length: count }, () => limiter.take(app, limit, nowMs));
}

describe('RateLimiter on the memory limit store', () => {
  it('allows a burst at once, then refuses', () => {
    const limiter = newLimiter();
    const limit = { perSecond: 10, burst: 5 };
    expect(takeMany(limiter, 'app1', limit, 5, T0)).toEqual([0, 0, 0, 0, 0]);
    expect(limiter.take('app1', limit, T0)).toBeGreaterThan(0);
  });

  it('refills at perSecond', () => {
    const limiter = newLimiter();
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
    const limiter = newLimiter();
    const limit = { perSecond: 100, burst: 3 };
    limiter.take('app1', limit, T0);
    const later = T0 + 3_600_000;
    expect(takeMany(limiter, 'app1', limit, 3, later)).toEqual([0, 0, 0]);
    expect(limiter.take('app1', limit, later)).toBeGreaterThan(0);
  });

  it('does not charge refused requests', () => {
    const limiter = newLimiter();
    const limit = { perSecond: 1, burst: 1 };
    expect(limiter.take('app1', limit, T0)).toBe(0);
    for (let i = 0; i < 50; i++) expect(limiter.take('app1', limit, T0 + i * 10)).toBeGreaterThan(0);
    expect(limiter.take('app1', limit, T0 + 1000)).toBe(0);
  });

  it('answers the whole seconds until a token is there, at least 1', () => {
    const limiter = newLimiter();
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
    const limiter = newLimiter();
    const limit = { perSecond: 1, burst: 2 };
    expect(takeMany(limiter, 'app1', limit, 2, T0)).toEqual([0, 0]);
    expect(limiter.take('app1', limit, T0)).toBeGreaterThan(0);
    expect(takeMany(limiter, 'app2', limit, 2, T0)).toEqual([0, 0]);
    expect(limiter.take('app2', limit, T0)).toBeGreaterThan(0);
  });

  it("applies each app's own limit", () => {
    const limiter = newLimiter();
    expect(takeMany(limiter, 'small', { perSecond: 1, burst: 1 }, 2, T0)).toEqual([0, 1]);
    expect(takeMany(limiter, 'big', { perSecond: 1, burst: 100 }, 101, T0).filter((wait) => wait === 0)).toHaveLength(
      100,
    );
  });

  it('takes a changed limit at once: a smaller burst caps what is left', () => {
    const limiter = newLimiter();
    expect(limiter.take('app1', { perSecond: 1, burst: 100 }, T0)).toBe(0);
    const smaller = { perSecond: 1, burst: 2 };
    expect(takeMany(limiter, 'app1', smaller, 3, T0 + 1)).toEqual([0, 0, 1]);
  });

  it('refuses with a minute to wait when the rate is 0 and the burst is spent', () => {
    const limiter = newLimiter();
    const limit = { perSecond: 0, burst: 2 };
    expect(takeMany(limiter, 'app1', limit, 2, T0)).toEqual([0, 0]);
    expect(limiter.take('app1', limit, T0 + 3_600_000)).toBe(60);
    expect(limiter.take('none', { perSecond: 0, burst: 0 }, T0)).toBe(60);
  });

  it('neither takes tokens away nor refills when the clock steps back, until it passes the time it had', () => {
    const limiter = newLimiter();
    const limit = { perSecond: 1, burst: 3 };
    expect(limiter.take('app1', limit, T0)).toBe(0);
    // The clock steps back ten seconds (or another node's clock is behind): two tokens are still there.
    expect(takeMany(limiter, 'app1', limit, 2, T0 - 10_000)).toEqual([0, 0]);
    // The wait counts to the bucket's time: ten seconds, then one for the token.
    expect(limiter.take('app1', limit, T0 - 10_000)).toBe(11);
    expect(limiter.take('app1', limit, T0 - 9000)).toBe(10);
    // Refilling goes on from the newest time the bucket was given: a lagging clock gains nothing.
    expect(limiter.take('app1', limit, T0 + 999)).toBe(1);
    expect(limiter.take('app1', limit, T0 + 1000)).toBe(0);
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
          const limiter = newLimiter();
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
          const limiter = newLimiter();
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

describe('RateLimiter with a local store for a shared store that fails (a Redis Cluster)', () => {
  /** A shared store that answers later, failing while `down`. */
  function flaky(kind: 'unavailable' | 'full') {
    const inner = new MemoryLimitStore();
    const state = { down: false };
    const store: LimitStore = {
      take: async (...args) => {
        if (state.down) throw new StoreError(kind);
        return inner.take(...args);
      },
      peek: async (...args) => inner.peek(...args),
      acquire: async (...args) => inner.acquire(...args),
      release: async (...args) => inner.release(...args),
    };
    return { store, state };
  }
  const limit = { perSecond: 1, burst: 2 };

  it('counts on the local store while the shared one is unavailable, and on the shared one after', async () => {
    const { store, state } = flaky('unavailable');
    const limiter = new RateLimiter(store, { local: new MemoryLimitStore() });
    expect(await limiter.take('app1', limit, T0)).toBe(0);
    state.down = true;
    // The local bucket is its own: a full burst, then refused.
    expect([await limiter.take('app1', limit, T0), await limiter.take('app1', limit, T0)]).toEqual([0, 0]);
    expect(await limiter.take('app1', limit, T0)).toBe(1);
    state.down = false;
    // The shared bucket had one taken before: one left.
    expect([await limiter.take('app1', limit, T0), await limiter.take('app1', limit, T0)]).toEqual([0, 1]);
  });

  it('still fails a request when the shared store is full, or when there is no local store', async () => {
    const full = flaky('full');
    full.state.down = true;
    await expect(new RateLimiter(full.store, { local: new MemoryLimitStore() }).take('a', limit, T0)).rejects.toThrow(
      StoreError,
    );
    const down = flaky('unavailable');
    down.state.down = true;
    await expect(new RateLimiter(down.store).take('a', limit, T0)).rejects.toThrow(StoreError);
  });
});

describe('RateLimiter split over buckets (a Redis Cluster)', () => {
  /** A memory store that records the keys taken from. */
  function recording() {
    const inner = new MemoryLimitStore();
    const keys = new Set<string>();
    const store: LimitStore = {
      take: (key, ...rest) => {
        keys.add(key);
        return inner.take(key, ...rest);
      },
      peek: (...args) => inner.peek(...args),
      acquire: (...args) => inner.acquire(...args),
      release: (...args) => inner.release(...args),
    };
    return { store, keys };
  }

  it('allows the whole burst over its buckets, taken in turn under their own hash tags, then refuses', async () => {
    const { store, keys } = recording();
    const limiter = new RateLimiter(store, { shards: 4 });
    const limit = { perSecond: 40, burst: 40 };
    const answers = [];
    for (let i = 0; i < 41; i++) answers.push(await limiter.take('app1', limit, T0));
    expect(answers.slice(0, 40).every((wait) => wait === 0)).toBe(true);
    expect(answers[40]).toBeGreaterThan(0);
    expect([...keys].sort()).toEqual(['api:{app1:0}', 'api:{app1:1}', 'api:{app1:2}', 'api:{app1:3}']);
    // A second later the rate is back in full: 40 more.
    const later = [];
    for (let i = 0; i < 40; i++) later.push(await limiter.take('app1', limit, T0 + 1000));
    expect(later.every((wait) => wait === 0)).toBe(true);
  });

  it('keeps a limit too small to split in one bucket', async () => {
    const { store, keys } = recording();
    const limiter = new RateLimiter(store, { shards: 8 });
    const limit = { perSecond: 10, burst: 20 };
    for (let i = 0; i < 20; i++) expect(await limiter.take('app1', limit, T0)).toBe(0);
    expect(await limiter.take('app1', limit, T0)).toBeGreaterThan(0);
    expect([...keys]).toEqual(['api:app1']);
  });
});
