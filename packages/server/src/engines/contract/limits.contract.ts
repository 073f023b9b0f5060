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
    if (this.#tokens === undefined) {
      this.#tokens = burst;
      this.#at = nowMs;
    } else if (nowMs > this.#at) {
      this.#tokens = Math.min(burst, this.#tokens + ((nowMs - this.#at) / 1000) * perSecond);
      this.#at = nowMs;
    } else {
      this.#tokens = Math.min(burst, this.#tokens);
    }
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    if (perSecond <= 0) return Number.POSITIVE_INFINITY;
    return Math.max(1, Math.ceil(this.#at - nowMs + ((1 - this.#tokens) * 1000) / perSecond));
  }
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
        let seed = 7;
        const next = () => {
          seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
          return seed / 2_147_483_648;
        };
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
