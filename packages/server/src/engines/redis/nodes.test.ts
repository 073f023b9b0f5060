import calculateSlot from 'cluster-key-slot';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { touchedKeys } from '../../../test/touched-keys.js';
import { nodeStoreContract } from '../contract/nodes.contract.js';
import { StoreError } from '../store-error.js';
import { RedisClient } from './client.js';
import { type RedisNodeOptions, RedisNodeStore } from './nodes.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

nodeStoreContract('RedisNodeStore, two nodes', async () => {
  const prefix = uniquePrefix('nodes');
  const clients = [
    await RedisClient.open({ ...redisTarget(redis), prefix }),
    await RedisClient.open({ ...redisTarget(redis), prefix }),
  ];
  return {
    // The suite moves time by hand: leases are timed by the callers' (one) clock.
    store: new RedisNodeStore(clients[0] as RedisClient, { leaseClock: 'caller' }),
    // Another node on the same Redis, with its own connection.
    peer: new RedisNodeStore(clients[1] as RedisClient, { leaseClock: 'caller' }),
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});

const LEASE = 15_000;

describe('RedisNodeStore', () => {
  const clients: RedisClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  async function open(
    prefix: string,
    options: RedisNodeOptions = {},
  ): Promise<{ client: RedisClient; store: RedisNodeStore }> {
    const client = await RedisClient.open({ ...redisTarget(redis), prefix });
    clients.push(client);
    return { client, store: new RedisNodeStore(client, options) };
  }

  it('keeps every step in the one slot of {nodes}', async () => {
    const { client, store } = await open(uniquePrefix('node-keys'), { leaseClock: 'caller' });
    const touched = await touchedKeys(client, async () => {
      await store.renew('na', 1000, LEASE);
      const claim = await store.claim(1000 + 2 * LEASE, 'nb', LEASE);
      if (claim) {
        await store.extend(claim, 1000 + 2 * LEASE, LEASE);
        await store.swept(claim);
      }
    });
    expect(touched.length).toBeGreaterThan(8);
    expect(new Set(touched.map((key) => calculateSlot(key)))).toEqual(new Set([calculateSlot('{nodes}')]));
  });

  it("times leases by Redis's clock: a node whose clock is behind by more than a lease is not claimed", async () => {
    const prefix = uniquePrefix('clocks');
    // The production default: no caller clock for leases.
    const { store: behind } = await open(prefix);
    const { store: ahead } = await open(prefix);
    const now = Date.now();
    // Node na's clock is 2 leases behind node nb's; both renew on time, by their own clocks.
    expect(await behind.renew('na', now - 2 * LEASE, LEASE)).toBe(false);
    await ahead.renew('nb', now, LEASE);
    expect(await ahead.claim(now, 'nb', 10_000)).toBeUndefined();
    expect(await behind.renew('na', now - 2 * LEASE, LEASE)).toBe(true);
    // Nor does a clock far ahead make the other node's lease look ended.
    expect(await ahead.claim(now + 10 * LEASE, 'nb', 10_000)).toBeUndefined();
    expect(await behind.renew('na', now - 2 * LEASE, LEASE)).toBe(true);
  });

  it('keeps its keys in one slot ({nodes}) and leaves none of a swept node behind', async () => {
    const prefix = uniquePrefix('node-keys');
    const { client, store } = await open(prefix, { leaseClock: 'caller' });
    await store.renew('na', 1000, LEASE);
    await store.renew('nb', 1000, 10 * LEASE);
    const claim = await store.claim(1000 + LEASE, 'nb', 10_000);
    expect(claim?.node).toBe('na');
    const keys = await client.call((r) => r.keys(`${prefix}*`));
    expect(keys.filter((key) => key !== client.key('gen')).every((key) => key.startsWith(`${prefix}{nodes}:`))).toBe(
      true,
    );
    if (claim) await store.swept(claim);
    expect(await client.call((r) => r.zrange(client.key('{nodes}:lapsed'), 0, -1))).toEqual([]);
    expect(await client.call((r) => r.hgetall(client.key('{nodes}:lapse')))).toEqual({});
    expect(await client.call((r) => r.zrange(client.key('{nodes}:lease'), 0, -1))).toEqual(['nb']);
  });

  it('fails with a StoreError, never hangs, when Redis cannot be reached', async () => {
    const { client, store } = await open(uniquePrefix('node-down'));
    await client.close();
    await expect(store.renew('na', 0, LEASE)).rejects.toBeInstanceOf(StoreError);
    await expect(store.claim(0, 'na', 10_000)).rejects.toBeInstanceOf(StoreError);
    await expect(store.extend({ node: 'nb', lapse: 1 }, 0, 10_000)).rejects.toBeInstanceOf(StoreError);
    await expect(store.swept({ node: 'nb', lapse: 1 })).rejects.toBeInstanceOf(StoreError);
  });
});
