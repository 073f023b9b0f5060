import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { touchedKeys } from '../../../test/touched-keys.js';
import { limitsContract } from '../contract/limits.contract.js';
import { StoreError } from '../store-error.js';
import { RedisClient } from './client.js';
import { RedisLimitStore } from './limits.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

limitsContract('RedisLimitStore, two nodes', async () => {
  const prefix = uniquePrefix('limits');
  const clients = [
    await RedisClient.open({ ...redisTarget(redis), prefix }),
    await RedisClient.open({ ...redisTarget(redis), prefix }),
  ];
  return {
    store: new RedisLimitStore(clients[0] as RedisClient),
    // Another node on the same Redis, with its own connection.
    peer: new RedisLimitStore(clients[1] as RedisClient),
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});

const T0 = 1_700_000_000_000;

describe('RedisLimitStore keys', () => {
  const clients: RedisClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  async function open(): Promise<{ client: RedisClient; store: RedisLimitStore }> {
    const client = await RedisClient.open({ ...redisTarget(redis), prefix: uniquePrefix('limit-keys') });
    clients.push(client);
    return { client, store: new RedisLimitStore(client) };
  }

  const pttl = (client: RedisClient, name: string) => client.call((r) => r.pttl(client.key(name)));

  it('touches one key per call: the bucket, or the slots, of the key given', async () => {
    const { client, store } = await open();
    const touched = await touchedKeys(client, async () => {
      await store.take('app1', 10, 5, T0);
      await store.peek('app1', 10, 5, T0);
      await store.acquire('app1:room', 'a', 2, 1000, T0);
      await store.release('app1:room', 'a');
    });
    expect(touched).toEqual(
      ['lim:t:app1', 'lim:t:app1', 'lim:s:app1:room', 'lim:s:app1:room'].map((k) => client.key(k)),
    );
  });

  it('lets an idle bucket vanish once it would be full again (a missing bucket starts full)', async () => {
    const { client, store } = await open();
    await store.take('app1', 10, 5, T0);
    // One token short: full again in 100 ms, kept a second longer.
    const ttl = await pttl(client, 'lim:t:app1');
    expect(ttl).toBeGreaterThan(1000);
    expect(ttl).toBeLessThanOrEqual(1100);
    for (let i = 0; i < 4; i++) await store.take('app1', 10, 5, T0);
    const spent = await pttl(client, 'lim:t:app1');
    expect(spent).toBeGreaterThan(1400);
    expect(spent).toBeLessThanOrEqual(1500);
  });

  it('writes nothing for a peek: no key for a bucket never taken from, no longer life for one taken', async () => {
    const { client, store } = await open();
    expect(await store.peek('app1', 10, 5, T0)).toBe(0);
    expect(await pttl(client, 'lim:t:app1')).toBe(-2);
    await store.take('app1', 10, 5, T0);
    const ttl = await pttl(client, 'lim:t:app1');
    const state = await client.call((r) => r.hgetall(client.key('lim:t:app1')));
    // Far later, and from a clock behind: neither moves the bucket nor its end.
    expect(await store.peek('app1', 10, 5, T0 + 60_000)).toBe(0);
    expect(await store.peek('app1', 10, 5, T0 - 60_000)).toBe(0);
    expect(await client.call((r) => r.hgetall(client.key('lim:t:app1')))).toEqual(state);
    expect(await pttl(client, 'lim:t:app1')).toBeLessThanOrEqual(ttl);
  });

  it('keeps a bucket that never refills', async () => {
    const { client, store } = await open();
    await store.take('none', 0, 2, T0);
    expect(await pttl(client, 'lim:t:none')).toBe(-1);
  });

  it('lets slots vanish: the key goes with its last release, or once every slot ended', async () => {
    const { client, store } = await open();
    expect(await store.acquire('u', 's1', 2, 60_000, T0)).toBe(true);
    expect(await store.acquire('u', 's2', 2, 120, T0)).toBe(true);
    // The key lives as long as its longest slot.
    expect(await pttl(client, 'lim:s:u')).toBeGreaterThan(59_000);
    await store.release('u', 's1');
    await store.release('u', 's2');
    expect(await pttl(client, 'lim:s:u')).toBe(-2);
    // Never released (a node that died): gone once its slot ended.
    expect(await store.acquire('v', 's1', 2, 120, T0)).toBe(true);
    const deadline = Date.now() + 5000;
    while ((await pttl(client, 'lim:s:v')) !== -2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await pttl(client, 'lim:s:v')).toBe(-2);
  });

  it('fails with a StoreError, never hangs, when Redis cannot be reached', async () => {
    const { client, store } = await open();
    await client.close();
    await expect(store.take('app1', 1, 1, T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.peek('app1', 1, 1, T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.acquire('u', 's', 1, 1000, T0)).rejects.toBeInstanceOf(StoreError);
    await expect(store.release('u', 's')).rejects.toBeInstanceOf(StoreError);
  });
});
