import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryNodeStore } from '../engines/memory/nodes.js';
import type { NodeClaim, NodeStore } from '../engines/types.js';
import { type LapseHandler, NodeRegistry } from './node-registry.js';

afterEach(() => {
  vi.useRealTimers();
});

const LEASE = 3000;
const CLAIM = 2000;
const log = pino({ level: 'silent' });

/** The memory store, down (every call rejects) while `down` is true, each call recorded in order. */
function fakeStore() {
  const real = new MemoryNodeStore();
  const state = { down: false, calls: [] as string[] };
  const call = <T>(name: string, run: () => T): T => {
    state.calls.push(name);
    if (state.down) throw new Error('the store does not answer');
    return run();
  };
  const store: NodeStore = {
    renew: async (node, nowMs, leaseMs) => call('renew', () => real.renew(node, nowMs, leaseMs)),
    claim: async (nowMs, self, claimMs) => call('claim', () => real.claim(nowMs, self, claimMs)),
    extend: async (claim, nowMs, claimMs) => call('extend', () => real.extend(claim, nowMs, claimMs)),
    swept: async (claim) => call('swept', () => real.swept(claim)),
    close: () => {},
  };
  return { store, state };
}

function registry(store: NodeStore, node: string, more: { lapsed?: () => void } = {}) {
  return new NodeRegistry({ node, nodes: store, log, now: Date.now, leaseMs: LEASE, claimMs: CLAIM, ...more });
}

/** A node that took its lease, then died (never renews again). */
async function deadNode(store: NodeStore, node: string): Promise<void> {
  await store.renew(node, Date.now(), LEASE);
}

describe('NodeRegistry', () => {
  it('takes its lease at start, then renews three times per lease', async () => {
    vi.useFakeTimers();
    const { store, state } = fakeStore();
    const nodes = registry(store, 'na');
    await nodes.start();
    expect(state.calls).toEqual(['renew']);
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(state.calls.filter((c) => c === 'renew')).toHaveLength(4);
    nodes.close();
  });

  it('says the lease lapsed when a renewal after the first finds it taken, once per lapse', async () => {
    vi.useFakeTimers();
    const { store } = fakeStore();
    const lapsed = vi.fn();
    const nodes = registry(store, 'na', { lapsed });
    await nodes.start();
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(lapsed).not.toHaveBeenCalled();
    // Another node claims it, as when this one was paused past its lease.
    expect((await store.claim(Date.now() + LEASE, 'nb', CLAIM))?.node).toBe('na');
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    expect(lapsed).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2 * LEASE);
    expect(lapsed).toHaveBeenCalledTimes(1);
    nodes.close();
  });

  it('hands each lapsed node to every feature, in the order registered, until each is done, then forgets it', async () => {
    vi.useFakeTimers();
    const { store } = fakeStore();
    await deadNode(store, 'nx');
    await deadNode(store, 'ny');
    const nodes = registry(store, 'na');
    const seen: string[] = [];
    // Calls take two batches of each node; groups one.
    const batches = new Map<string, number>();
    nodes.onLapse('calls', async ({ node }) => {
      const n = (batches.get(node) ?? 0) + 1;
      batches.set(node, n);
      seen.push(`calls ${node} ${n}`);
      return n < 2 ? 'more' : 'done';
    });
    nodes.onLapse('groups', async ({ node }) => {
      seen.push(`groups ${node}`);
      return 'done';
    });
    await nodes.start();
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(LEASE + LEASE / 10);
    expect(seen).toEqual(['calls nx 1', 'calls nx 2', 'groups nx', 'calls ny 1', 'calls ny 2', 'groups ny']);
    // Swept once: later sweeps find nothing.
    await vi.advanceTimersByTimeAsync(3 * LEASE);
    expect(seen).toHaveLength(6);
    expect(await store.claim(Date.now(), 'nz', CLAIM)).toBeUndefined();
    nodes.close();
  });

  it('keeps its claim through a long sweep of one node', async () => {
    vi.useFakeTimers();
    const { store, state } = fakeStore();
    await deadNode(store, 'nx');
    const nodes = registry(store, 'na');
    let left = 5;
    nodes.onLapse('presence', async () => {
      // Each batch takes a while (a big node): a third of the claim.
      await new Promise((resolve) => setTimeout(resolve, CLAIM / 3));
      return --left > 0 ? 'more' : 'done';
    });
    await nodes.start();
    const other = registry(store, 'nb');
    const stolen: string[] = [];
    other.onLapse('presence', async ({ node }) => {
      stolen.push(node);
      return 'done';
    });
    await other.start();
    await vi.advanceTimersByTimeAsync(LEASE + 2 * CLAIM + LEASE / 10);
    expect(left).toBe(0);
    expect(state.calls).toContain('extend');
    // The other node never got the node being swept.
    expect(stolen).toEqual([]);
    nodes.close();
    other.close();
  });

  it('leaves a node claimed when a feature fails: the others still sweep it, and a later sweep finishes it', async () => {
    vi.useFakeTimers();
    const { store } = fakeStore();
    await deadNode(store, 'nx');
    const nodes = registry(store, 'na');
    let fail = true;
    const seen: string[] = [];
    nodes.onLapse('calls', async ({ node }) => {
      seen.push(`calls ${node}`);
      if (fail) throw new Error('calls failed');
      return 'done';
    });
    nodes.onLapse('groups', async ({ node }) => {
      seen.push(`groups ${node}`);
      return 'done';
    });
    await nodes.start();
    await vi.advanceTimersByTimeAsync(LEASE + LEASE / 10);
    expect(seen).toEqual(['calls nx', 'groups nx']);
    fail = false;
    // Held back until renewals held for a lease, and until the failed claim ended: then finished once.
    await vi.advanceTimersByTimeAsync(LEASE + CLAIM);
    expect(seen).toEqual(['calls nx', 'groups nx', 'calls nx', 'groups nx']);
    await vi.advanceTimersByTimeAsync(3 * LEASE);
    expect(seen).toHaveLength(4);
    nodes.close();
  });

  it('after the store was down past a lease, renews before it sweeps: no live node is taken for the outage', async () => {
    vi.useFakeTimers();
    const { store, state } = fakeStore();
    const nodes = registry(store, 'na');
    const other = registry(store, 'nb');
    const swept: string[] = [];
    const handler =
      (by: string): LapseHandler =>
      async (claim: NodeClaim) => {
        swept.push(`${by} ${claim.node}`);
        return 'done';
      };
    nodes.onLapse('presence', handler('na'));
    other.onLapse('presence', handler('nb'));
    await nodes.start();
    await other.start();
    await vi.advanceTimersByTimeAsync(LEASE);
    // Every node waits for the store longer than a lease: every lease looks ended once it is back.
    state.down = true;
    await vi.advanceTimersByTimeAsync(2 * LEASE);
    state.down = false;
    await vi.advanceTimersByTimeAsync(3 * LEASE);
    // Each renewed before any sweep: nobody was taken for the outage.
    expect(swept).toEqual([]);
    nodes.close();
    other.close();
  });

  it('has each lapsed node swept by one of several live nodes', async () => {
    vi.useFakeTimers();
    const { store } = fakeStore();
    const dead = ['n1', 'n2', 'n3', 'n4', 'n5'];
    for (const node of dead) await deadNode(store, node);
    const swept: string[] = [];
    const live = ['na', 'nb', 'nc'].map((node) => {
      const nodes = registry(store, node);
      nodes.onLapse('calls', async (claim) => {
        swept.push(claim.node);
        return 'done';
      });
      return nodes;
    });
    for (const nodes of live) await nodes.start();
    await vi.advanceTimersByTimeAsync(3 * LEASE);
    expect(swept.sort()).toEqual(dead);
    for (const nodes of live) nodes.close();
  });
});
