/**
 * The IdempotencyStore contract as one test suite, run by every implementation's runner file.
 *
 * @example
 * ```ts
 * idempotencyContract('MemoryIdempotencyStore', async () => ({ store: new MemoryIdempotencyStore(), cleanup: async () => {} }));
 * ```
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { IdempotencyStore } from '../idempotency-store.js';

export interface IdempotencyHarness {
  /** A store with no key yet. */
  store: IdempotencyStore;
  /** A second store on the same data, as another node has; left out when nothing is shared. */
  peer?: IdempotencyStore;
  cleanup(): Promise<void>;
}

// Near the real clock: Redis expires keys by its own, so ends must lie ahead of it.
const T0 = Date.now();
const HOLD = 30_000;
const KEEP = 300_000;

export function idempotencyContract(name: string, makeStore: () => Promise<IdempotencyHarness>): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    let harness: IdempotencyHarness;
    let store: IdempotencyStore;
    let peer: IdempotencyStore;
    let app: string;
    let apps = 0;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
      peer = harness.peer ?? harness.store;
      app = `app${++apps}`;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    it('reserves a free key, then answers in flight, then the stored answer, on every node', async () => {
      expect(await store.reserve(app, 'k1', 'f1', 'o1', T0 + HOLD, T0)).toEqual({ state: 'reserved' });
      expect(await peer.reserve(app, 'k1', 'f1', 'o2', T0 + HOLD, T0 + 1)).toEqual({ state: 'in_flight' });
      await store.complete(app, 'k1', 'o1', '{"ids":{"r":"1-0"}}', T0 + KEEP, T0 + 2);
      expect(await peer.reserve(app, 'k1', 'f1', 'o3', T0 + HOLD, T0 + 3)).toEqual({
        state: 'answered',
        answer: '{"ids":{"r":"1-0"}}',
      });
    });

    it('answers conflict for another fingerprint, held or answered', async () => {
      await store.reserve(app, 'k', 'f1', 'o1', T0 + HOLD, T0);
      expect(await peer.reserve(app, 'k', 'f2', 'o2', T0 + HOLD, T0)).toEqual({ state: 'conflict' });
      await store.complete(app, 'k', 'o1', 'a', T0 + KEEP, T0);
      expect(await peer.reserve(app, 'k', 'f2', 'o3', T0 + HOLD, T0)).toEqual({ state: 'conflict' });
      // Keys are per app, and distinct keys apart.
      expect(await peer.reserve(`${app}x`, 'k', 'f2', 'o4', T0 + HOLD, T0)).toEqual({ state: 'reserved' });
      expect(await peer.reserve(app, 'k2', 'f2', 'o5', T0 + HOLD, T0)).toEqual({ state: 'reserved' });
    });

    it('of concurrent reserves of one key exactly one holds it', async () => {
      const found = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (i % 2 === 0 ? store : peer).reserve(app, 'race', 'f', `o${i}`, T0 + HOLD, T0),
        ),
      );
      expect(found.filter((r) => r.state === 'reserved')).toHaveLength(1);
      expect(found.filter((r) => r.state === 'in_flight')).toHaveLength(7);
    });

    it('a released key is free again; release and complete by another request change nothing', async () => {
      await store.reserve(app, 'k', 'f1', 'o1', T0 + HOLD, T0);
      // Another request: one with the same body (waiting on it), or with another.
      await peer.release(app, 'k', 'o2');
      await peer.complete(app, 'k', 'o2', 'x', T0 + KEEP, T0);
      expect(await store.reserve(app, 'k', 'f1', 'o3', T0 + HOLD, T0)).toEqual({ state: 'in_flight' });
      await peer.release(app, 'k', 'o1');
      expect(await store.reserve(app, 'k', 'f2', 'o4', T0 + HOLD, T0)).toEqual({ state: 'reserved' });
      // An answered key is not released: its answer stays.
      await store.complete(app, 'k', 'o4', 'kept', T0 + KEEP, T0);
      await store.release(app, 'k', 'o4');
      expect(await peer.reserve(app, 'k', 'f2', 'o5', T0 + HOLD, T0)).toEqual({ state: 'answered', answer: 'kept' });
    });

    it('a reservation ends at its hold, an answer at its keep: then the key is free', async () => {
      await store.reserve(app, 'held', 'f', 'o1', T0 + HOLD, T0);
      expect(await peer.reserve(app, 'held', 'g', 'o2', T0 + HOLD + HOLD, T0 + HOLD)).toEqual({ state: 'reserved' });
      // The first holder's late answer is not stored over the new reservation.
      await store.complete(app, 'held', 'o1', 'late', T0 + KEEP, T0 + HOLD);
      expect(await store.reserve(app, 'held', 'g', 'o3', T0 + KEEP, T0 + HOLD + 1)).toEqual({ state: 'in_flight' });

      await store.reserve(app, 'done', 'f', 'o4', T0 + HOLD, T0);
      await store.complete(app, 'done', 'o4', 'a', T0 + KEEP, T0 + 1);
      expect(await peer.reserve(app, 'done', 'f', 'o5', T0 + KEEP + HOLD, T0 + KEEP - 1)).toEqual({
        state: 'answered',
        answer: 'a',
      });
      expect(await peer.reserve(app, 'done', 'f', 'o6', T0 + KEEP + HOLD, T0 + KEEP)).toEqual({ state: 'reserved' });
    });

    it('a hold that ended and was taken by a retry of the same body is not completed or released by its first holder', async () => {
      await store.reserve(app, 'slow', 'f', 'first', T0 + HOLD, T0);
      // The first request outlived its hold; its retry (same body) holds the key now.
      expect(await peer.reserve(app, 'slow', 'f', 'retry', T0 + HOLD + HOLD, T0 + HOLD)).toEqual({ state: 'reserved' });
      // The first one fails late: its release leaves the retry's hold.
      await store.release(app, 'slow', 'first');
      expect(await store.reserve(app, 'slow', 'f', 'third', T0 + HOLD + HOLD, T0 + HOLD + 1)).toEqual({
        state: 'in_flight',
      });
      // Or answers late: its answer is not stored over the retry's, which is.
      await store.complete(app, 'slow', 'first', '"first"', T0 + KEEP, T0 + HOLD + 2);
      expect(await store.reserve(app, 'slow', 'f', 'third', T0 + HOLD + HOLD, T0 + HOLD + 3)).toEqual({
        state: 'in_flight',
      });
      await peer.complete(app, 'slow', 'retry', '"retry"', T0 + KEEP, T0 + HOLD + 4);
      expect(await store.reserve(app, 'slow', 'f', 'third', T0 + HOLD + HOLD, T0 + HOLD + 5)).toEqual({
        state: 'answered',
        answer: '"retry"',
      });
    });

    it('takes keys of any printable ASCII, the longest too', async () => {
      const key = `{a}:b* ~${'x'.repeat(192)}`;
      expect(await store.reserve(app, key, 'f', 'o1', T0 + HOLD, T0)).toEqual({ state: 'reserved' });
      await store.complete(app, key, 'o1', '{}', T0 + KEEP, T0);
      expect(await peer.reserve(app, key, 'f', 'o2', T0 + HOLD, T0)).toEqual({ state: 'answered', answer: '{}' });
    });
  });
}
