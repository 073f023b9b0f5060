/**
 * The RevocationStore contract as one test suite, run by every implementation's runner file.
 *
 * @example
 * ```ts
 * revocationsContract('MemoryRevocationStore', async () => ({ store: new MemoryRevocationStore(), cleanup: async () => {} }));
 * ```
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RevocationStore } from '../revocation-store.js';

export interface RevocationsHarness {
  /** A store with no revocation yet. */
  store: RevocationStore;
  /** A second store on the same data, as another node has; left out when nothing is shared. */
  peer?: RevocationStore;
  /** Opens the store again on the same data, as a restart does; left out when nothing is kept. */
  reopen?: () => Promise<RevocationStore>;
  cleanup(): Promise<void>;
}

// Near the real clock: Redis expires keys by its own, so ends must lie ahead of it.
const T0 = Date.now();
const DAY = 86_400_000;

export function revocationsContract(name: string, makeStore: () => Promise<RevocationsHarness>): void {
  describe(`RevocationStore contract: ${name}`, () => {
    let harness: RevocationsHarness;
    let store: RevocationStore;
    let peer: RevocationStore;
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

    it('reads nothing for an app with no revocation', async () => {
      const read = await store.read(app, T0);
      expect(read.app).toBeUndefined();
      expect([...read.users]).toEqual([]);
    });

    it('keeps an app-wide and per-user revocations, read by every node', async () => {
      expect(await store.revoke(app, undefined, T0 - 1000, T0 + DAY, 10, T0)).toBe('stored');
      expect(await store.revoke(app, 'ann', T0 - 500, T0 + DAY, 10, T0)).toBe('stored');
      expect(await peer.revoke(app, 'bob', T0, T0 + DAY, 10, T0)).toBe('stored');
      const read = await peer.read(app, T0);
      expect(read.app).toBe(T0 - 1000);
      expect(new Map(read.users)).toEqual(
        new Map([
          ['ann', T0 - 500],
          ['bob', T0],
        ]),
      );
      // Another app sees none of them.
      expect((await store.read(`${app}x`, T0)).users.size).toBe(0);
    });

    it('keeps the later time: an earlier revocation changes nothing', async () => {
      await store.revoke(app, 'ann', T0, T0 + DAY, 10, T0);
      await peer.revoke(app, 'ann', T0 - 60_000, T0 + DAY - 60_000, 10, T0);
      await store.revoke(app, undefined, T0, T0 + DAY, 10, T0);
      await store.revoke(app, undefined, T0 - 5, T0 + DAY, 10, T0);
      const read = await store.read(app, T0);
      expect(read.users.get('ann')).toBe(T0);
      expect(read.app).toBe(T0);
      await store.revoke(app, 'ann', T0 + 1000, T0 + DAY + 1000, 10, T0);
      expect((await peer.read(app, T0)).users.get('ann')).toBe(T0 + 1000);
    });

    it('drops a revocation once it ends', async () => {
      await store.revoke(app, undefined, T0, T0 + 60_000, 10, T0);
      await store.revoke(app, 'ann', T0, T0 + 60_000, 10, T0);
      await store.revoke(app, 'bob', T0, T0 + 120_000, 10, T0);
      const later = await peer.read(app, T0 + 60_000);
      expect(later.app).toBeUndefined();
      expect([...later.users.keys()]).toEqual(['bob']);
    });

    it('refuses a user past the bound, but never a user in force nor the app; ended ones free room', async () => {
      expect(await store.revoke(app, 'ann', T0, T0 + 60_000, 2, T0)).toBe('stored');
      expect(await peer.revoke(app, 'bob', T0, T0 + DAY, 2, T0)).toBe('stored');
      expect(await store.revoke(app, 'cat', T0, T0 + DAY, 2, T0)).toBe('full');
      expect((await store.read(app, T0)).users.has('cat')).toBe(false);
      expect(await store.revoke(app, 'ann', T0 + 1, T0 + 60_000, 2, T0)).toBe('stored');
      expect(await store.revoke(app, undefined, T0, T0 + DAY, 2, T0)).toBe('stored');
      // Ann's ends: Cat fits.
      expect(await peer.revoke(app, 'cat', T0, T0 + DAY, 2, T0 + 60_000)).toBe('stored');
      expect([...(await store.read(app, T0 + 60_000)).users.keys()].sort()).toEqual(['bob', 'cat']);
    });

    it('takes user ids of any characters', async () => {
      const odd = 'a:b{c}* 😀';
      await store.revoke(app, odd, T0, T0 + DAY, 10, T0);
      expect((await peer.read(app, T0)).users.get(odd)).toBe(T0);
    });

    it('keeps revocations across a restart (where the store keeps anything)', async () => {
      await store.revoke(app, 'ann', T0, T0 + DAY, 10, T0);
      await store.revoke(app, undefined, T0 - 1, T0 + DAY, 10, T0);
      if (harness.reopen === undefined) return;
      const again = await harness.reopen();
      const read = await again.read(app, T0);
      expect(read.app).toBe(T0 - 1);
      expect(read.users.get('ann')).toBe(T0);
    });
  });
}
