/**
 * The LimitStore contract as one test suite, run by every implementation's runner file.
 *
 * @example
 * ```ts
 * limitsContract('MemoryLimitStore', async () => ({ store: new MemoryLimitStore(), cleanup: async () => {} }));
 * ```
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LimitStore } from '../types.js';

export interface LimitsHarness {
  /** A store with nothing counted yet. */
  store: LimitStore;
  /**
   * A second store on the same backend, as another node has: what one counts, the other sees.
   * Stores with nothing to share leave it out; the tests then use the same store.
   */
  peer?: LimitStore;
  cleanup(): Promise<void>;
}

const T0 = 1_700_000_000_000;

/** The token bucket the contract describes, in plain doubles: what every store must answer. */
class ExactBucket {
  #tokens: number | undefined;
  #at = 0;

  take(perSecond: number, burst: number, nowMs: number): number {
    const now = this.#refilled(perSecond, burst, nowMs);
    const wait = ExactBucket.#wait(now, perSecond, nowMs);
    this.#tokens = wait === 0 ? now.tokens - 1 : now.tokens;
    this.#at = now.at;
    return wait;
  }

  /** What `take` would answer now, nothing taken nor stored. */
  peek(perSecond: number, burst: number, nowMs: number): number {
    return ExactBucket.#wait(this.#refilled(perSecond, burst, nowMs), perSecond, nowMs);
  }

  #refilled(perSecond: number, burst: number, nowMs: number): { tokens: number; at: number } {
    if (this.#tokens === undefined) return { tokens: burst, at: nowMs };
    if (nowMs > this.#at) {
      return { tokens: Math.min(burst, this.#tokens + ((nowMs - this.#at) / 1000) * perSecond), at: nowMs };
    }
    return { tokens: Math.min(burst, this.#tokens), at: this.#at };
  }

  static #wait(bucket: { tokens: number; at: number }, perSecond: number, nowMs: number): number {
    if (bucket.tokens >= 1) return 0;
    if (perSecond <= 0) return Number.POSITIVE_INFINITY;
    return Math.max(1, Math.ceil(bucket.at - nowMs + ((1 - bucket.tokens) * 1000) / perSecond));
  }
}

/** The same uneven calls every run: a linear congruential generator, in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

export function limitsContract(name: string, makeStore: () => Promise<LimitsHarness>): void {
  describe(`LimitStore contract: ${name}`, () => {
    let harness: LimitsHarness;
    let store: LimitStore;
    let peer: LimitStore;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
      peer = harness.peer ?? harness.store;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    /** Takes `count` tokens one after the other; answers each wait. */
    const takeMany = async (
      s: LimitStore,
      key: string,
      perSecond: number,
      burst: number,
      count: number,
      now: number,
    ) => {
      const waits: number[] = [];
      for (let i = 0; i < count; i++) waits.push(await s.take(key, perSecond, burst, now));
      return waits;
    };

    describe('take (token bucket)', () => {
      it('allows the burst at once, then answers the ms until a token is back', async () => {
        expect(await takeMany(store, 'a', 10, 5, 5, T0)).toEqual([0, 0, 0, 0, 0]);
        expect(await store.take('a', 10, 5, T0)).toBe(100);
        expect(await store.take('a', 10, 5, T0 + 40)).toBe(60);
        expect(await store.take('a', 10, 5, T0 + 100)).toBe(0);
      });

      it('refills at perSecond, never above the burst however long it was idle', async () => {
        await takeMany(store, 'a', 10, 5, 5, T0);
        expect(await takeMany(store, 'a', 10, 5, 3, T0 + 250)).toEqual([0, 0, 100 - 50]);
        const later = T0 + 3_600_000;
        expect(await takeMany(store, 'a', 10, 5, 5, later)).toEqual([0, 0, 0, 0, 0]);
        expect(await store.take('a', 10, 5, later)).toBeGreaterThan(0);
      });

      it('takes nothing for a refused call', async () => {
        expect(await store.take('a', 1, 1, T0)).toBe(0);
        for (let i = 0; i < 20; i++) {
          // The wait shrinks as time passes (to the ms, give or take rounding): nothing was taken.
          const wait = await store.take('a', 1, 1, T0 + i * 10);
          expect(Math.abs(wait - (1000 - i * 10))).toBeLessThanOrEqual(1);
        }
        expect(await store.take('a', 1, 1, T0 + 1000)).toBe(0);
      });

      it('answers at least 1 ms, and whole ms', async () => {
        expect(await store.take('fast', 1_000_000, 1, T0)).toBe(0);
        expect(await store.take('fast', 1_000_000, 1, T0)).toBe(1);
        expect(await store.take('third', 3, 1, T0)).toBe(0);
        expect(await store.take('third', 3, 1, T0)).toBe(334);
      });

      it('keeps keys apart, and apart from slots of the same key', async () => {
        expect(await takeMany(store, 'a', 1, 2, 3, T0)).toEqual([0, 0, 1000]);
        expect(await takeMany(store, 'b', 1, 2, 2, T0)).toEqual([0, 0]);
        expect(await store.acquire('a', 's1', 1, 10_000, T0)).toBe(true);
        expect(await store.take('c', 1, 1, T0)).toBe(0);
      });

      it('applies the limit given now: a smaller burst caps what is left', async () => {
        expect(await store.take('a', 1, 100, T0)).toBe(0);
        expect(await takeMany(store, 'a', 1, 2, 3, T0 + 1)).toEqual([0, 0, 1000]);
      });

      it('answers Infinity when the rate is 0 and the burst is spent', async () => {
        expect(await takeMany(store, 'a', 0, 2, 2, T0)).toEqual([0, 0]);
        expect(await store.take('a', 0, 2, T0 + 3_600_000)).toBe(Number.POSITIVE_INFINITY);
        expect(await store.take('none', 0, 0, T0)).toBe(Number.POSITIVE_INFINITY);
      });

      it('refills nothing and takes nothing away for a clock behind the bucket', async () => {
        expect(await store.take('a', 1, 3, T0)).toBe(0);
        // Another node's clock, ten seconds behind: the two tokens left are there, no more.
        expect(await takeMany(peer, 'a', 1, 3, 2, T0 - 10_000)).toEqual([0, 0]);
        expect(await peer.take('a', 1, 3, T0 - 10_000)).toBe(11_000);
        expect(await peer.take('a', 1, 3, T0 - 9000)).toBe(10_000);
        // Refilling goes on from the newest time given.
        expect(await store.take('a', 1, 3, T0 + 500)).toBe(500);
        expect(await store.take('a', 1, 3, T0 + 1000)).toBe(0);
      });

      it('keeps fractions of a token: a rate that is no round number refills what it should', async () => {
        expect(await takeMany(store, 'a', 0.3, 3, 3, T0)).toEqual([0, 0, 0]);
        // 1.5 tokens at T0 + 5 s; 0.5 left, and one whole again 1666.67 ms later.
        expect(await store.take('a', 0.3, 3, T0 + 5000)).toBe(0);
        expect(await store.take('a', 0.3, 3, T0 + 5000)).toBe(1667);
        expect(await store.take('a', 0.3, 3, T0 + 6666)).toBe(1);
        expect(await store.take('a', 0.3, 3, T0 + 6667)).toBe(0);
      });

      it('answers what an exact bucket answers, over a long run of uneven calls', async () => {
        const model = new ExactBucket();
        const next = seeded(7);
        let now = T0;
        for (let i = 0; i < 300; i++) {
          now += Math.floor(next() * 400);
          const limit = i < 150 ? { perSecond: 7.3, burst: 4 } : { perSecond: 1 / 3, burst: 2.5 };
          const s = i % 3 === 0 ? peer : store;
          expect(await s.take('run', limit.perSecond, limit.burst, now)).toBe(
            model.take(limit.perSecond, limit.burst, now),
          );
        }
      });

      it('is one bucket for the store and its peer', async () => {
        expect(await store.take('a', 1, 3, T0)).toBe(0);
        expect(await peer.take('a', 1, 3, T0)).toBe(0);
        expect(await store.take('a', 1, 3, T0)).toBe(0);
        expect(await peer.take('a', 1, 3, T0)).toBeGreaterThan(0);
        expect(await store.take('a', 1, 3, T0)).toBeGreaterThan(0);
      });

      it('gives out the burst once, however many calls race', async () => {
        const waits = await Promise.all(
          Array.from({ length: 60 }, (_, i) => (i % 2 ? peer : store).take('race', 1, 25, T0)),
        );
        expect(waits.filter((wait) => wait === 0)).toHaveLength(25);
      });
    });

    describe('peek (the bucket read, nothing taken)', () => {
      it('answers 0 for a full bucket, a key never taken from included', async () => {
        expect(await store.peek('fresh', 10, 5, T0)).toBe(0);
        expect(await store.peek('one', 1, 1, T0)).toBe(0);
        expect(await store.take('a', 10, 5, T0)).toBe(0);
        expect(await store.peek('a', 10, 5, T0)).toBe(0);
        // A burst under one token: a missing bucket holds that much, as take finds it.
        expect(await store.peek('half', 2, 0.5, T0)).toBe(250);
        expect(await store.take('half', 2, 0.5, T0)).toBe(250);
      });

      it('never takes: the whole burst is there after many peeks', async () => {
        for (let i = 0; i < 50; i++) expect(await store.peek('a', 1, 5, T0)).toBe(0);
        expect(await takeMany(store, 'a', 1, 5, 5, T0)).toEqual([0, 0, 0, 0, 0]);
        for (let i = 0; i < 50; i++) expect(await store.peek('a', 1, 5, T0)).toBe(1000);
        expect(await store.take('a', 1, 5, T0)).toBe(1000);
        // Nor refills for good: a peek later on leaves the bucket where take left it.
        expect(await store.peek('a', 1, 5, T0 + 2500)).toBe(0);
        expect(await store.peek('a', 1, 5, T0 + 500)).toBe(500);
      });

      it('answers the wait take would, as time moves', async () => {
        await takeMany(store, 'a', 10, 5, 5, T0);
        for (const [at, wait] of [
          [T0, 100],
          [T0 + 40, 60],
          [T0 + 50, 50],
          [T0 + 100, 0],
        ] as const) {
          expect(await store.peek('a', 10, 5, at)).toBe(wait);
          expect(await store.peek('a', 10, 5, at)).toBe(wait);
          expect(await store.take('a', 10, 5, at)).toBe(wait);
        }
        // That last take spent the token that came back.
        expect(await store.peek('a', 10, 5, T0 + 100)).toBe(100);
        expect(await store.peek('a', 10, 5, T0 + 150)).toBe(50);
      });

      it('answers whole ms, at least 1', async () => {
        expect(await store.take('fast', 1_000_000, 1, T0)).toBe(0);
        expect(await store.peek('fast', 1_000_000, 1, T0)).toBe(1);
        expect(await store.take('third', 3, 1, T0)).toBe(0);
        expect(await store.peek('third', 3, 1, T0)).toBe(334);
        expect(await store.peek('third', 3, 1, T0 + 333)).toBe(1);
        expect(await store.peek('third', 3, 1, T0 + 334)).toBe(0);
      });

      it('answers Infinity when the rate is 0 and the burst is spent', async () => {
        expect(await store.peek('a', 0, 2, T0)).toBe(0);
        await takeMany(store, 'a', 0, 2, 2, T0);
        expect(await store.peek('a', 0, 2, T0)).toBe(Number.POSITIVE_INFINITY);
        expect(await store.peek('a', 0, 2, T0 + 3_600_000)).toBe(Number.POSITIVE_INFINITY);
        expect(await store.peek('none', 0, 0, T0)).toBe(Number.POSITIVE_INFINITY);
        expect(await store.take('none', 0, 0, T0)).toBe(Number.POSITIVE_INFINITY);
      });

      it('refills nothing and takes nothing away for a clock behind the bucket', async () => {
        expect(await store.take('a', 1, 3, T0)).toBe(0);
        expect(await peer.peek('a', 1, 3, T0 - 10_000)).toBe(0);
        expect(await takeMany(peer, 'a', 1, 3, 2, T0 - 10_000)).toEqual([0, 0]);
        expect(await peer.peek('a', 1, 3, T0 - 10_000)).toBe(11_000);
        expect(await peer.peek('a', 1, 3, T0 - 9000)).toBe(10_000);
        expect(await peer.take('a', 1, 3, T0 - 9000)).toBe(10_000);
        expect(await store.peek('a', 1, 3, T0 + 500)).toBe(500);
        expect(await store.peek('a', 1, 3, T0 + 1000)).toBe(0);
        expect(await store.take('a', 1, 3, T0 + 1000)).toBe(0);
        expect(await store.peek('a', 1, 3, T0 + 1000)).toBe(1000);
      });

      it('applies the limit given now without keeping it: a smaller burst caps only that answer', async () => {
        expect(await takeMany(store, 'a', 1, 3, 2, T0)).toEqual([0, 0]);
        expect(await store.peek('a', 1, 0.5, T0)).toBe(500);
        // The token left is still there for the limit take gives.
        expect(await store.take('a', 1, 3, T0)).toBe(0);
      });

      it('keeps keys apart, and apart from slots of the same key', async () => {
        expect(await takeMany(store, 'a', 1, 2, 2, T0)).toEqual([0, 0]);
        expect(await store.peek('a', 1, 2, T0)).toBe(1000);
        expect(await store.peek('b', 1, 2, T0)).toBe(0);
        expect(await store.acquire('c', 's1', 1, 10_000, T0)).toBe(true);
        expect(await store.peek('c', 1, 1, T0)).toBe(0);
        expect(await store.acquire('c', 's2', 1, 10_000, T0)).toBe(false);
      });

      it('sees what the peer took, and the peer sees what the store took', async () => {
        expect(await store.take('a', 1, 2, T0)).toBe(0);
        expect(await peer.peek('a', 1, 2, T0)).toBe(0);
        expect(await peer.take('a', 1, 2, T0)).toBe(0);
        expect(await store.peek('a', 1, 2, T0)).toBe(1000);
        expect(await peer.peek('a', 1, 2, T0 + 400)).toBe(600);
        expect(await store.take('a', 1, 2, T0 + 400)).toBe(600);
      });

      it('answers what take would next, over a long run of uneven calls and clocks', async () => {
        const model = new ExactBucket();
        const next = seeded(11);
        let newest = T0;
        for (let i = 0; i < 400; i++) {
          newest += Math.floor(next() * 300);
          // One call in five from a clock up to half a second behind.
          const now = next() < 0.2 ? newest - Math.floor(next() * 500) : newest;
          const limit = i < 200 ? { perSecond: 5.7, burst: 3 } : { perSecond: 1 / 7, burst: 1.5 };
          const s = next() < 0.5 ? peer : store;
          const expected = model.peek(limit.perSecond, limit.burst, now);
          expect(await s.peek('run', limit.perSecond, limit.burst, now)).toBe(expected);
          if (next() < 0.6) {
            expect(await s.take('run', limit.perSecond, limit.burst, now)).toBe(
              model.take(limit.perSecond, limit.burst, now),
            );
          }
        }
      });

      it('takes nothing from takes racing it: the burst is given out once, whole', async () => {
        // Two takes to a peek, on the store and its peer in turn.
        const calls = await Promise.all(
          Array.from({ length: 60 }, async (_, i) => {
            const s = i % 2 ? peer : store;
            const took = i % 3 !== 0;
            const wait = await (took ? s.take('race', 1, 25, T0) : s.peek('race', 1, 25, T0));
            return { took, wait };
          }),
        );
        const takes = calls.filter((call) => call.took);
        expect(takes).toHaveLength(40);
        expect(takes.filter((call) => call.wait === 0)).toHaveLength(25);
        expect(await store.peek('race', 1, 25, T0)).toBe(1000);
      });
    });

    describe('acquire and release (slots held at once)', () => {
      const TTL = 10_000;

      it('holds at most max slots, and a released one makes room', async () => {
        for (const slot of ['s1', 's2', 's3']) expect(await store.acquire('u', slot, 3, TTL, T0)).toBe(true);
        expect(await store.acquire('u', 's4', 3, TTL, T0)).toBe(false);
        await store.release('u', 's2');
        expect(await store.acquire('u', 's4', 3, TTL, T0)).toBe(true);
        expect(await store.acquire('u', 's5', 3, TTL, T0)).toBe(false);
      });

      it('frees one place per slot: releasing twice, or a slot never held, frees nothing more', async () => {
        expect(await store.acquire('u', 's1', 2, TTL, T0)).toBe(true);
        expect(await store.acquire('u', 's2', 2, TTL, T0)).toBe(true);
        await store.release('u', 's1');
        await store.release('u', 's1');
        await store.release('u', 'never');
        await store.release('nobody', 's1');
        expect(await store.acquire('u', 's3', 2, TTL, T0)).toBe(true);
        expect(await store.acquire('u', 's4', 2, TTL, T0)).toBe(false);
      });

      it('keeps one place for a slot acquired again, with its new end', async () => {
        expect(await store.acquire('u', 's1', 2, TTL, T0)).toBe(true);
        expect(await store.acquire('u', 's1', 2, TTL, T0 + 5000)).toBe(true);
        expect(await store.acquire('u', 's2', 2, TTL, T0 + 5000)).toBe(true);
        // Full, but s1 may renew itself.
        expect(await store.acquire('u', 's1', 2, TTL, T0 + 6000)).toBe(true);
        expect(await store.acquire('u', 's3', 2, TTL, T0 + 14_000)).toBe(false);
        // s2 ended at T0 + 15000, s1 at T0 + 16000.
        expect(await store.acquire('u', 's3', 2, TTL, T0 + 15_000)).toBe(true);
        expect(await store.acquire('u', 's4', 2, TTL, T0 + 15_999)).toBe(false);
        expect(await store.acquire('u', 's4', 2, TTL, T0 + 16_000)).toBe(true);
      });

      it('gives places back once slots end unreleased (a node that died)', async () => {
        expect(await peer.acquire('u', 'dead.1', 2, 1000, T0)).toBe(true);
        expect(await peer.acquire('u', 'dead.2', 2, 3000, T0)).toBe(true);
        expect(await store.acquire('u', 'live.1', 2, TTL, T0 + 999)).toBe(false);
        expect(await store.acquire('u', 'live.1', 2, TTL, T0 + 1000)).toBe(true);
        expect(await store.acquire('u', 'live.2', 2, TTL, T0 + 2000)).toBe(false);
        expect(await store.acquire('u', 'live.2', 2, TTL, T0 + 3000)).toBe(true);
      });

      it('keeps keys apart', async () => {
        expect(await store.acquire('u1', 's', 1, TTL, T0)).toBe(true);
        expect(await store.acquire('u1', 't', 1, TTL, T0)).toBe(false);
        expect(await store.acquire('u2', 't', 1, TTL, T0)).toBe(true);
        expect(await store.take('u1', 1, 1, T0)).toBe(0);
      });

      it('counts the slots of the store and its peer together', async () => {
        expect(await store.acquire('u', 'a.1', 3, TTL, T0)).toBe(true);
        expect(await peer.acquire('u', 'b.1', 3, TTL, T0)).toBe(true);
        expect(await store.acquire('u', 'a.2', 3, TTL, T0)).toBe(true);
        expect(await peer.acquire('u', 'b.2', 3, TTL, T0)).toBe(false);
        await store.release('u', 'b.1');
        expect(await peer.acquire('u', 'b.2', 3, TTL, T0)).toBe(true);
      });

      it('never holds more than max, however many calls race', async () => {
        const got = await Promise.all(
          Array.from({ length: 40 }, (_, i) => (i % 2 ? peer : store).acquire('race', `s${i}`, 7, TTL, T0)),
        );
        expect(got.filter(Boolean)).toHaveLength(7);
        await Promise.all(got.map((held, i) => (held ? store.release('race', `s${i}`) : undefined)));
        const again = await Promise.all(
          Array.from({ length: 10 }, (_, i) => peer.acquire('race', `t${i}`, 7, TTL, T0 + 1)),
        );
        expect(again.filter(Boolean)).toHaveLength(7);
      });
    });
  });
}
