import calculateSlot from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { touchedKeys } from '../../../test/touched-keys.js';
import { callStoreContract } from '../contract/calls.contract.js';
import { DAY, redisKeys, redisNodes, T0, useRedis } from '../contract/harness.js';
import { StoreError } from '../store-error.js';
import type { CallRecord } from '../types.js';
import { RedisCallStore } from './calls.js';

const redis = useRedis();

callStoreContract(
  'RedisCallStore, two nodes',
  redisNodes(redis, 'calls', (client) => new RedisCallStore(client)),
);

describe('RedisCallStore keys', () => {
  const { open, keys, pttl } = redisKeys(redis, 'call-keys', (client) => new RedisCallStore(client));

  const call = (more: Partial<CallRecord> = {}): CallRecord => ({
    app: 'app1',
    id: 'c1',
    name: 'c1',
    from: 'ann',
    to: 'bob',
    media: ['audio'],
    fromPage: 'na.1',
    startedAt: T0,
    ringUntil: T0 + 30_000,
    ...more,
  });

  it('leaves no key of a call behind once it ended, by end or by the sweep', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    await store.place(call());
    await store.answer('app1', 'c1', 'nb.1', T0 + 1000);
    expect((await keys(client)).length).toBeGreaterThan(before.length);
    await store.end('app1', 'c1');
    expect((await keys(client)).sort()).toEqual(before);
    await store.place(call({ id: 'c2' }));
    await store.takeMissed(T0 + 60_000, 10);
    expect((await keys(client)).sort()).toEqual(before);
    await store.place(call({ id: 'c3' }));
    await store.answer('app1', 'c3', 'nb.1', T0 + 1000);
    expect(await store.takeNode('nb', 10)).toHaveLength(1);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it('lets the keys of a call expire: a day after its ring ends, a week after it was answered', async () => {
    const { client, store } = await open();
    await store.place(call());
    for (const name of ['call:{app1}:c:c1', 'call:{app1}:u:ann', 'call:{app1}:u:bob']) {
      const ttl = await pttl(client, name);
      expect(ttl).toBeGreaterThan(DAY + 29_000);
      expect(ttl).toBeLessThanOrEqual(DAY + 30_000);
    }
    await store.answer('app1', 'c1', 'nb.1', T0 + 1000);
    for (const name of ['call:{app1}:c:c1', 'call:{app1}:u:ann', 'call:{app1}:u:bob']) {
      expect(await pttl(client, name)).toBeGreaterThan(6 * DAY);
    }
  });

  it('counts a user whose call expired as free, and sweeps what the call left in its indexes', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    await store.place(call());
    // The safety net fired (as if the call outlived its keys).
    await client.call((r) => r.del(client.key('call:{app1}:c:c1')));
    expect(await store.callOf('app1', 'ann')).toBeUndefined();
    expect(await store.place(call({ id: 'c2', from: 'bob', to: 'ann' }))).toBe('placed');
    expect(await store.end('app1', 'c1')).toBeUndefined();
    expect((await store.takeMissed(T0 + 60_000, 10)).map((c) => c.id)).toEqual(['c2']);
    expect(await keys(client)).not.toContainEqual(expect.stringContaining('call:ring:'));
    // A live node keeps the dead call's name in its set until the node itself dies.
    expect(await client.call((r) => r.smembers(client.key('call:n:{na}')))).toEqual(['app1:c1']);
    expect(await store.takeNode('na', 10)).toEqual([]);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it("keeps a call's decisions in its app's slot, and its indexes on the node's and a ring's own", async () => {
    const { client, store } = await open();
    const touched = await touchedKeys(client, async () => {
      await store.place(call());
      await store.answer('app1', 'c1', 'nb.1', T0 + 1000);
      await store.end('app1', 'c1');
      await store.place(call({ id: 'c2' }));
      await store.takeMissed(T0 + 60_000, 10);
    });
    const slots = new Set(touched.map((key) => calculateSlot(key)));
    const app = calculateSlot(client.key('call:{app1}:c:c1'));
    expect(touched.filter((key) => calculateSlot(key) === app).every((key) => key.includes('call:{app1}:'))).toBe(true);
    const others = touched.filter((key) => calculateSlot(key) !== app).map((key) => key.slice(client.prefix.length));
    // Besides the app's slot: the two pages' nodes and the rings (a fixed few), never a global key.
    expect(new Set(others.filter((key) => !key.startsWith('call:ring:{call-ring-')))).toEqual(
      new Set(['call:n:{na}', 'call:n:{nb}']),
    );
    expect(slots.size).toBeLessThanOrEqual(1 + 2 + 8);
  });

  it('leaves what a node that died between steps recorded to the sweeps, which drop it', async () => {
    const { client, store } = await open();
    const before = (await keys(client)).sort();
    // Recorded on the node and in its ring, then the node died before the place script ran.
    await client.call((r) => r.sadd(client.key('call:n:{nx}'), 'app1:c9'));
    const ring = client.key(`call:ring:{call-ring-${calculateSlot('app1:c9') % 8}}`);
    await client.call((r) => r.zadd(ring, T0 + 30_000, 'app1:c9'));
    expect(await store.takeMissed(T0 + 60_000, 10)).toEqual([]);
    expect(await store.takeNode('nx', 10)).toEqual([]);
    expect((await keys(client)).sort()).toEqual(before);
  });

  it('fails with a StoreError, never hangs, when Redis cannot be reached', async () => {
    const { client, store } = await open();
    await client.close();
    await expect(store.place(call())).rejects.toBeInstanceOf(StoreError);
    await expect(store.answer('app1', 'c1', 'nb.1', T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.end('app1', 'c1')).rejects.toBeInstanceOf(StoreError);
    await expect(store.get('app1', 'c1')).rejects.toBeInstanceOf(StoreError);
    await expect(store.callOf('app1', 'ann')).rejects.toBeInstanceOf(StoreError);
    await expect(store.takeMissed(T0, 10)).rejects.toBeInstanceOf(StoreError);
    await expect(store.takeNode('na', 10)).rejects.toBeInstanceOf(StoreError);
  });
});
