import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { touchedKeys } from '../../../test/touched-keys.js';
import { DAY, redisKeys, redisNodes, T0, useRedis } from '../contract/harness.js';
import { streamStoreContract } from '../contract/streams.contract.js';
import { StoreError } from '../store-error.js';
import type { StreamMember } from '../types.js';
import { RedisStreamStore } from './streams.js';

const redis = useRedis();

streamStoreContract(
  'RedisStreamStore, two nodes',
  redisNodes(redis, 'streams', (client) => new RedisStreamStore(client)),
);

describe('RedisStreamStore keys', () => {
  const { open, keys, pttl } = redisKeys(redis, 'stream-keys', (client) => new RedisStreamStore(client));

  const viewer = (page: string): StreamMember => ({ page, user: `u-${page}`, role: 'viewer' });

  it('leaves no key of a stream behind once its last member left, by leave or by the sweep', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    await store.join('app1', 's', { page: 'na.1', user: 'pat', role: 'presenter' }, 4, T0);
    await store.join('app1', 's', viewer('nb.2'), 4, T0);
    await store.goLive('app1', 's', 'na.1', 'r', T0 + 1);
    expect((await keys(client)).length).toBeGreaterThan(before.length);
    await store.leave('app1', 's', 'nb.2', T0 + 2);
    await store.leave('app1', 's', 'na.1', T0 + 3);
    expect((await keys(client)).sort()).toEqual(before);
    await store.join('app1', 't', { page: 'nz.1', user: 'sam', role: 'presenter' }, 4, T0);
    await store.join('app1', 't', viewer('nz.2'), 4, T0);
    await store.goLive('app1', 't', 'nz.1', 'r', T0 + 1);
    expect((await store.takeNode('nz', T0 + 2, 10)).length).toBe(2);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it("lets a stream's keys expire a week after its last change", async () => {
    const { client, store } = await open();
    await store.join('app1', 's', { page: 'na.1', user: 'pat', role: 'presenter' }, 4, T0);
    await store.join('app1', 's', viewer('na.2'), 4, T0);
    await store.goLive('app1', 's', 'na.1', 'r', T0 + 1);
    const names = ['m', 'o', 's', 'w'].map((kind) => `stream:{app1:s}:${kind}`);
    for (const name of names) await client.call((r) => r.pexpire(client.key(name), DAY));
    await store.join('app1', 's', viewer('na.3'), 4, T0 + 2);
    for (const name of names) {
      const ttl = await pttl(client, name);
      expect(ttl).toBeGreaterThan(7 * DAY - 60_000);
      expect(ttl).toBeLessThanOrEqual(7 * DAY);
    }
  });

  it("keeps a stream's decisions in its slot and a page's record in its node's", async () => {
    const { client, store } = await open();
    const touched = await touchedKeys(client, async () => {
      await store.join('app1', 's', { page: 'na.1', user: 'pat', role: 'presenter' }, 4, T0);
      await store.join('app1', 's', viewer('nb.1'), 4, T0);
      await store.goLive('app1', 's', 'na.1', 'r', T0 + 1);
      await store.state('app1', 's');
      await store.members('app1', 's');
      await store.stopLive('app1', 's', 'na.1', T0 + 2);
      await store.leave('app1', 's', 'na.1', T0 + 3);
      await store.takeNode('nb', T0 + 4, 10);
    });
    const bySlot = new Map<number, Set<string>>();
    for (const key of touched) {
      const slot = calculateSlot(key);
      bySlot.set(slot, (bySlot.get(slot) ?? new Set()).add(key.slice(client.prefix.length)));
    }
    expect([...bySlot.values()].map((keys) => [...keys].sort()).sort()).toEqual(
      [
        ['stream:{app1:s}:m', 'stream:{app1:s}:o', 'stream:{app1:s}:s', 'stream:{app1:s}:w'],
        ['stream:n:{na}'],
        ['stream:n:{nb}'],
      ].sort(),
    );
  });

  it('leaves what a node that died between steps recorded to its sweep, which drops it', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    // Recorded on the node, then the node died before the join script ran.
    await client.call((r) => r.sadd(client.key('stream:n:{nx}'), JSON.stringify(['app1', 'x', 'nx.1'])));
    expect(await store.takeNode('nx', T0, 10)).toEqual([]);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it('fails with a StoreError, never hangs, when Redis cannot be reached', async () => {
    const { client, store } = await open();
    await client.close();
    await expect(store.join('app1', 's', viewer('na.1'), 4, T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.leave('app1', 's', 'na.1', T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.goLive('app1', 's', 'na.1', 'r', T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.stopLive('app1', 's', 'na.1', T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.state('app1', 's')).rejects.toBeInstanceOf(StoreError);
    await expect(store.members('app1', 's')).rejects.toBeInstanceOf(StoreError);
    await expect(store.takeNode('na', T0, 10)).rejects.toBeInstanceOf(StoreError);
  });
});
