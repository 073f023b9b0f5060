/**
 * The PresenceStore contract as one test suite, run by every implementation's runner file.
 * Time is never read from the clock: every call gets `nowMs`, so the suite moves time by hand.
 *
 * @example
 * ```ts
 * presenceContract('MemoryPresenceStore', async ({ offlineDelayMs }) => {
 *   const store = new MemoryPresenceStore({ offlineDelayMs });
 *   return { store, cleanup: async () => store.close() };
 * });
 * ```
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PresenceStore } from '../types.js';

export interface PresenceHarness {
  /** A store where nobody is online. */
  store: PresenceStore;
  /** Closes the store and removes whatever it kept. */
  cleanup(): Promise<void>;
}

export interface PresenceOptions {
  /** How long a user stays online after their last page closed. */
  offlineDelayMs: number;
}

const T0 = 1_700_000_000_000;
const DELAY = 10_000;

export function presenceContract(
  name: string,
  makeStore: (options: PresenceOptions) => Promise<PresenceHarness>,
): void {
  describe(`PresenceStore contract: ${name}`, () => {
    const open: PresenceHarness[] = [];

    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.cleanup();
    });

    async function make(offlineDelayMs = DELAY): Promise<PresenceStore> {
      const harness = await makeStore({ offlineDelayMs });
      open.push(harness);
      return harness.store;
    }

    /** Whether one user is online. */
    async function isOnline(store: PresenceStore, app: string, user: string, nowMs: number): Promise<boolean> {
      const answer = await store.online(app, [user], nowMs);
      expect(answer).toHaveLength(1);
      return answer[0] === true;
    }

    it('knows nobody at first', async () => {
      const store = await make();
      expect(await store.online('app1', ['ann', 'bob', ''], T0)).toEqual([false, false, false]);
      expect(await store.online('app1', [], T0)).toEqual([]);
    });

    it('has a user online from their first page on, for as long as it is open', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      expect(await isOnline(store, 'app1', 'ann', T0)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 100 * DELAY)).toBe(true);
      expect(await isOnline(store, 'app1', 'bob', T0)).toBe(false);
    });

    it('keeps a user with two pages online until both closed and the delay passed', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      await store.pageOpened('app1', 'ann', T0 + 1);
      await store.pageClosed('app1', 'ann', T0 + 2);
      expect(await isOnline(store, 'app1', 'ann', T0 + 2)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 2 + 10 * DELAY)).toBe(true);
      const lastClose = T0 + 20 * DELAY;
      await store.pageClosed('app1', 'ann', lastClose);
      expect(await isOnline(store, 'app1', 'ann', lastClose)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', lastClose + DELAY - 1)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', lastClose + DELAY)).toBe(false);
    });

    it('keeps a user online until the offline delay after the last close, then offline', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0 + 500);
      expect(await isOnline(store, 'app1', 'ann', T0 + 500)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 500 + DELAY - 1)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 500 + DELAY)).toBe(false);
      expect(await isOnline(store, 'app1', 'ann', T0 + 500 + 100 * DELAY)).toBe(false);
    });

    it('uses the offline delay it was given', async () => {
      const store = await make(2500);
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0);
      expect(await isOnline(store, 'app1', 'ann', T0 + 2499)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 2500)).toBe(false);
    });

    it('keeps a user online when a page comes back within the delay, and counts the delay from the new close', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0);
      await store.pageOpened('app1', 'ann', T0 + DELAY - 1);
      expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 50 * DELAY)).toBe(true);
      const close = T0 + 60 * DELAY;
      await store.pageClosed('app1', 'ann', close);
      expect(await isOnline(store, 'app1', 'ann', close + DELAY - 1)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', close + DELAY)).toBe(false);
    });

    it('has a user online again when a page opens after they went offline', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0);
      expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(false);
      await store.pageOpened('app1', 'ann', T0 + 2 * DELAY);
      expect(await isOnline(store, 'app1', 'ann', T0 + 2 * DELAY)).toBe(true);
      await store.pageClosed('app1', 'ann', T0 + 3 * DELAY);
      expect(await isOnline(store, 'app1', 'ann', T0 + 4 * DELAY - 1)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 4 * DELAY)).toBe(false);
    });

    it('has a user online again when a page opens after the delay passed unobserved', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0);
      // Nobody asked in between.
      await store.pageOpened('app1', 'ann', T0 + 5 * DELAY);
      expect(await isOnline(store, 'app1', 'ann', T0 + 5 * DELAY)).toBe(true);
      expect(await isOnline(store, 'app1', 'ann', T0 + 50 * DELAY)).toBe(true);
    });

    it('does not change its answer by being asked', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0);
      for (let i = 0; i < 3; i++) expect(await isOnline(store, 'app1', 'ann', T0 + DELAY / 2)).toBe(true);
      for (let i = 0; i < 3; i++) expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(false);
      await store.pageOpened('app1', 'ann', T0 + DELAY + 1);
      expect(await isOnline(store, 'app1', 'ann', T0 + DELAY + 1)).toBe(true);
    });

    it('answers each id in the order given, duplicates included', async () => {
      const store = await make();
      for (const user of ['ann', 'cy', 'dé 🚀']) await store.pageOpened('app1', user, T0);
      await store.pageOpened('app1', 'gone', T0);
      await store.pageClosed('app1', 'gone', T0);
      const asked = ['cy', 'bob', 'ann', 'cy', 'gone', 'dé 🚀', 'bob', 'ann', 'Ann'];
      expect(await store.online('app1', asked, T0 + 1)).toEqual([
        true,
        false,
        true,
        true,
        true,
        true,
        false,
        true,
        false,
      ]);
      expect(await store.online('app1', asked, T0 + DELAY)).toEqual([
        true,
        false,
        true,
        true,
        false,
        true,
        false,
        true,
        false,
      ]);
    });

    it('answers for many users at once', async () => {
      const store = await make();
      const users = Array.from({ length: 1000 }, (_, i) => `user-${i}`);
      for (const user of users) await store.pageOpened('app1', user, T0);
      for (const [i, user] of users.entries()) if (i % 2 === 1) await store.pageClosed('app1', user, T0);
      const answer = await store.online('app1', [...users].reverse(), T0 + DELAY);
      expect(answer).toEqual(users.map((_, i) => i % 2 === 0).reverse());
    });

    it('keeps apps apart', async () => {
      const store = await make();
      await store.pageOpened('app1', 'ann', T0);
      expect(await isOnline(store, 'app2', 'ann', T0)).toBe(false);
      // A close in another app, where ann has no page, changes nothing here.
      await store.pageClosed('app2', 'ann', T0);
      expect(await isOnline(store, 'app1', 'ann', T0 + 10 * DELAY)).toBe(true);
      // A page in each app: closing one leaves the other online.
      await store.pageOpened('app2', 'ann', T0);
      await store.pageClosed('app2', 'ann', T0 + 1);
      expect(await isOnline(store, 'app2', 'ann', T0 + 1 + DELAY)).toBe(false);
      expect(await isOnline(store, 'app1', 'ann', T0 + 1 + DELAY)).toBe(true);
    });

    it('ignores closes of pages that were never opened', async () => {
      const store = await make();
      await store.pageClosed('app1', 'ghost', T0);
      expect(await isOnline(store, 'app1', 'ghost', T0)).toBe(false);
      await store.pageOpened('app1', 'ann', T0);
      await store.pageClosed('app1', 'ann', T0);
      // One close too many: it must not leave ann owing a page.
      await store.pageClosed('app1', 'ann', T0 + 1);
      await store.pageOpened('app1', 'ann', T0 + 2 * DELAY);
      expect(await isOnline(store, 'app1', 'ann', T0 + 2 * DELAY)).toBe(true);
      await store.pageClosed('app1', 'ann', T0 + 3 * DELAY);
      expect(await isOnline(store, 'app1', 'ann', T0 + 4 * DELAY)).toBe(false);
    });
  });
}
