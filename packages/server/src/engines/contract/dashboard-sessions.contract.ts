/**
 * The DashboardSessionStore contract as one test suite, run by every implementation's runner file.
 *
 * @example
 * ```ts
 * dashboardSessionsContract('MemoryDashboardSessionStore', async () => ({
 *   store: new MemoryDashboardSessionStore(),
 *   cleanup: async () => {},
 * }));
 * ```
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DashboardSessionStore } from '../dashboard-session-store.js';

export interface DashboardSessionsHarness {
  /** A store with no secret and no session yet. */
  store: DashboardSessionStore;
  /**
   * A second store on the same data, as another node (or process on the same file) has. Stores with
   * nothing to share leave it out; the tests then use the same store.
   */
  peer?: DashboardSessionStore;
  /** Closes the store and opens it again on the same data, as a restart does. Left out: nothing is kept. */
  reopen?: () => Promise<DashboardSessionStore>;
  cleanup(): Promise<void>;
}

const T0 = 1_800_000_000_000;
const HOUR = 3_600_000;

export function dashboardSessionsContract(name: string, makeStore: () => Promise<DashboardSessionsHarness>): void {
  describe(`DashboardSessionStore contract: ${name}`, () => {
    let harness: DashboardSessionsHarness;
    let store: DashboardSessionStore;
    let peer: DashboardSessionStore;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
      peer = harness.peer ?? harness.store;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    it('keeps the first secret asked for: later candidates, from any node, get it back', async () => {
      const [first, second] = [randomBytes(32), randomBytes(32)];
      expect(Buffer.from(await store.signingSecret(first)).equals(first)).toBe(true);
      expect(Buffer.from(await store.signingSecret(second)).equals(first)).toBe(true);
      expect(Buffer.from(await peer.signingSecret(second)).equals(first)).toBe(true);
    });

    it('reading the secret makes none: undefined until one is made, then the kept one on every node', async () => {
      expect(await store.storedSecret()).toBeUndefined();
      expect(await peer.storedSecret()).toBeUndefined();
      const secret = randomBytes(32);
      await store.signingSecret(secret);
      expect(Buffer.from((await peer.storedSecret()) ?? Buffer.alloc(0)).equals(secret)).toBe(true);
      expect(Buffer.from((await store.storedSecret()) ?? Buffer.alloc(0)).equals(secret)).toBe(true);
    });

    it('two nodes making the secret at once agree on one', async () => {
      const [a, b] = await Promise.all([store.signingSecret(randomBytes(32)), peer.signingSecret(randomBytes(32))]);
      expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
      expect(Buffer.from(await store.signingSecret(randomBytes(32))).equals(Buffer.from(a))).toBe(true);
    });

    it('a session is open from open until it ends, on every node', async () => {
      expect(await store.isOpen('s1', T0)).toBe(false);
      await store.open('s1', T0 + 12 * HOUR, T0);
      expect(await store.isOpen('s1', T0)).toBe(true);
      expect(await peer.isOpen('s1', T0 + 12 * HOUR - 1)).toBe(true);
      expect(await peer.isOpen('s1', T0 + 12 * HOUR)).toBe(false);
      expect(await store.isOpen('s2', T0)).toBe(false);
    });

    it('closing a session ends it on every node, and leaves the others open', async () => {
      await store.open('s1', T0 + HOUR, T0);
      await store.open('s2', T0 + HOUR, T0);
      await peer.close('s1');
      expect(await store.isOpen('s1', T0)).toBe(false);
      expect(await peer.isOpen('s1', T0)).toBe(false);
      expect(await store.isOpen('s2', T0)).toBe(true);
      // Closing one not open (closed already, or never opened) changes nothing.
      await store.close('s1');
      await store.close('never');
      expect(await peer.isOpen('s2', T0)).toBe(true);
    });

    it('a session opened after others ended keeps its own end', async () => {
      await store.open('old', T0 + HOUR, T0);
      await store.open('new', T0 + 3 * HOUR, T0 + 2 * HOUR);
      expect(await store.isOpen('old', T0 + 2 * HOUR)).toBe(false);
      expect(await peer.isOpen('new', T0 + 2 * HOUR)).toBe(true);
    });

    it('keeps the secret and open sessions across a restart (where the store keeps anything)', async () => {
      const secret = randomBytes(32);
      await store.signingSecret(secret);
      await store.open('kept', T0 + HOUR, T0);
      await store.open('ended', T0 + HOUR, T0);
      await store.close('ended');
      if (harness.reopen === undefined) return;
      const again = await harness.reopen();
      expect(Buffer.from(await again.signingSecret(randomBytes(32))).equals(secret)).toBe(true);
      expect(await again.isOpen('kept', T0)).toBe(true);
      expect(await again.isOpen('ended', T0)).toBe(false);
    });
  });
}
