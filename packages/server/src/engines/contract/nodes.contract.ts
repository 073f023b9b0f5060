/**
 * The NodeStore contract as one test suite, run by every engine's runner file.
 * Time is never read from the clock: every call gets its time, so the suite moves time by hand (a
 * Redis runner times leases by the callers' clock for it).
 *
 * A lapsed node must reach exactly one sweeper at a time; with a `peer` (a second store on the same
 * backend, as on another node) the suite races both against each other.
 *
 * @example
 * ```ts
 * nodeStoreContract('MemoryNodeStore', async () => ({ store: new MemoryNodeStore(), cleanup: async () => {} }));
 * ```
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { NodeClaim, NodeStore } from '../types.js';

export interface NodesHarness {
  /** A store with no node. */
  store: NodeStore;
  /** A second store on the same backend, as on another node; engines of one process leave it out. */
  peer?: NodeStore;
  /** Closes the stores and removes whatever they kept. */
  cleanup(): Promise<void>;
}

const T0 = 1_700_000_000_000;
const LEASE = 15_000;
const CLAIM = 10_000;

export function nodeStoreContract(name: string, makeStore: () => Promise<NodesHarness>): void {
  describe(`NodeStore contract: ${name}`, () => {
    const open: NodesHarness[] = [];

    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.cleanup();
    });

    async function makeBoth(): Promise<{ store: NodeStore; peer: NodeStore }> {
      const harness = await makeStore();
      open.push(harness);
      return { store: harness.store, peer: harness.peer ?? harness.store };
    }

    /** Claims until none is left, as one sweeper would, saying `swept` after each. */
    async function sweepAll(store: NodeStore, now: number, self: string): Promise<string[]> {
      const nodes: string[] = [];
      for (let n = 0; n < 100; n++) {
        const claim = await store.claim(now, self, CLAIM);
        if (!claim) return nodes.sort();
        nodes.push(claim.node);
        await store.swept(claim);
      }
      throw new Error('claims never ran out');
    }

    it('answers false at a node’s first renewal, true at the next ones', async () => {
      const { store, peer } = await makeBoth();
      expect(await store.renew('na', T0, LEASE)).toBe(false);
      expect(await store.renew('na', T0 + 1000, LEASE)).toBe(true);
      expect(await peer.renew('na', T0 + 2000, LEASE)).toBe(true);
      expect(await peer.renew('nb', T0 + 2000, LEASE)).toBe(false);
    });

    it('claims nothing while every node renews in time', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      await peer.renew('nb', T0, LEASE);
      expect(await peer.claim(T0 + LEASE - 1, 'nb', CLAIM)).toBeUndefined();
      for (let now = T0; now < T0 + 4 * LEASE; now += LEASE / 3) {
        await store.renew('na', now, LEASE);
        await peer.renew('nb', now, LEASE);
        expect(await peer.claim(now + LEASE - 1, 'nb', CLAIM)).toBeUndefined();
        expect(await store.claim(now + LEASE - 1, 'na', CLAIM)).toBeUndefined();
      }
    });

    it('hands a node whose lease ended to one sweeper, and forgets it once swept', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      await peer.renew('nb', T0, 10 * LEASE);
      const claim = await peer.claim(T0 + LEASE, 'nb', CLAIM);
      expect(claim?.node).toBe('na');
      expect(claim?.lapse).toEqual(expect.any(Number));
      // Claimed: nobody else gets it while the claim holds.
      expect(await store.claim(T0 + LEASE, 'nc', CLAIM)).toBeUndefined();
      expect(await peer.claim(T0 + LEASE + CLAIM - 1, 'nb', CLAIM)).toBeUndefined();
      await peer.swept(claim as NodeClaim);
      expect(await store.claim(T0 + 5 * LEASE, 'nc', CLAIM)).toBeUndefined();
    });

    it('never hands a node to itself, even when its own lease ended', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      await peer.renew('nb', T0, LEASE);
      // Both leases ended (the store was out of reach): each sweeper gets only the other node.
      expect((await store.claim(T0 + LEASE, 'na', CLAIM))?.node).toBe('nb');
      // The caller's own lease is still held: its next renewal finds it.
      expect(await store.renew('na', T0 + LEASE, LEASE)).toBe(true);
      expect(await peer.renew('nb', T0 + LEASE, LEASE)).toBe(false);
      expect(await peer.claim(T0 + LEASE, 'nb', CLAIM)).toBeUndefined();
    });

    it('hands a node again once its sweeper’s claim ended unswept (the sweeper died), with the same lapse', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      const first = await peer.claim(T0 + LEASE, 'nb', CLAIM);
      expect(first?.node).toBe('na');
      expect(await store.claim(T0 + LEASE + CLAIM - 1, 'nc', CLAIM)).toBeUndefined();
      const second = await store.claim(T0 + LEASE + CLAIM, 'nc', CLAIM);
      expect(second).toEqual(first);
      await store.swept(second as NodeClaim);
      expect(await peer.claim(T0 + 10 * LEASE, 'nb', CLAIM)).toBeUndefined();
    });

    it('keeps a claim it extends past its first end', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      const claim = (await peer.claim(T0 + LEASE, 'nb', CLAIM)) as NodeClaim;
      await peer.extend(claim, T0 + LEASE + CLAIM - 1, CLAIM);
      expect(await store.claim(T0 + LEASE + CLAIM, 'nc', CLAIM)).toBeUndefined();
      expect(await store.claim(T0 + LEASE + 2 * CLAIM - 2, 'nc', CLAIM)).toBeUndefined();
      expect((await store.claim(T0 + LEASE + 2 * CLAIM - 1, 'nc', CLAIM))?.node).toBe('na');
    });

    it('has a lapsed node that renews alive again: false that once, its claim still to sweep', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      const claim = (await peer.claim(T0 + LEASE, 'nb', CLAIM)) as NodeClaim;
      // Paused past its lease, the node comes back.
      expect(await store.renew('na', T0 + LEASE + 1, LEASE)).toBe(false);
      expect(await store.renew('na', T0 + LEASE + 2, LEASE)).toBe(true);
      await peer.swept(claim);
      // Alive again: not claimed while it renews, and its renewals still hold.
      expect(await peer.claim(T0 + 2 * LEASE, 'nb', CLAIM)).toBeUndefined();
      expect(await store.renew('na', T0 + 2 * LEASE, LEASE)).toBe(true);
    });

    it('hands a node that lapsed again while swept once more, with a later lapse', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      const first = (await peer.claim(T0 + LEASE, 'nb', CLAIM)) as NodeClaim;
      expect(await store.renew('na', T0 + LEASE + 1, 1000)).toBe(false);
      // Its second lease ends while the sweep of its first lapse still holds its claim.
      expect(await peer.claim(T0 + LEASE + 1001, 'nb', CLAIM)).toBeUndefined();
      await peer.swept(first);
      const second = (await peer.claim(T0 + LEASE + 1002, 'nb', CLAIM)) as NodeClaim;
      expect(second.node).toBe('na');
      expect(second.lapse).toBeGreaterThan(first.lapse);
      await peer.swept(second);
      expect(await peer.claim(T0 + 10 * LEASE, 'nb', CLAIM)).toBeUndefined();
    });

    it('hands out every lapsed node, each to one of many racing sweepers on two nodes', async () => {
      const { store, peer } = await makeBoth();
      const dead = Array.from({ length: 12 }, (_, i) => `n${i}`);
      for (const node of dead) await store.renew(node, T0, LEASE);
      await store.renew('na', T0, 10 * LEASE);
      await peer.renew('nb', T0, 10 * LEASE);
      const now = T0 + LEASE;
      const claims = await Promise.all(
        Array.from({ length: 16 }, (_, i) => (i % 2 ? peer.claim(now, 'nb', CLAIM) : store.claim(now, 'na', CLAIM))),
      );
      const nodes = claims.filter((c): c is NodeClaim => c !== undefined).map((c) => c.node);
      expect(nodes.sort()).toEqual([...dead].sort());
      for (const claim of claims) if (claim) await store.swept(claim);
      expect(await sweepAll(peer, now + 5 * LEASE, 'nb')).toEqual([]);
    });

    it('keeps nodes apart: one lapsed node does not take another with it', async () => {
      const { store, peer } = await makeBoth();
      await store.renew('na', T0, LEASE);
      await store.renew('nc', T0, 3 * LEASE);
      await peer.renew('nb', T0, 10 * LEASE);
      expect(await sweepAll(peer, T0 + LEASE, 'nb')).toEqual(['na']);
      expect(await store.renew('nc', T0 + LEASE, 3 * LEASE)).toBe(true);
    });
  });
}
