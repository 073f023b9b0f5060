import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { streamStoreContract } from '../contract/streams.contract.js';
import { StoreError } from '../store-error.js';
import type { StreamMember } from '../types.js';
import { RedisClient } from './client.js';
import { RedisStreamStore } from './streams.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.close();
});

streamStoreContract('RedisStreamStore, two nodes', async () => {
  const prefix = uniquePrefix('streams');
  const clients = [
    await RedisClient.open({ url: redis.url, prefix }),
    await RedisClient.open({ url: redis.url, prefix }),
  ];
  return {
    store: new RedisStreamStore(clients[0] as RedisClient),
    // Another node on the same Redis, with its own connection.
    peer: new RedisStreamStore(clients[1] as RedisClient),
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});

const T0 = 1_700_000_000_000;
const DAY = 24 * 3600_000;

describe('RedisStreamStore keys', () => {
  const clients: RedisClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  async function open(): Promise<{ client: RedisClient; store: RedisStreamStore }> {
    const client = await RedisClient.open({ url: redis.url, prefix: uniquePrefix('stream-keys') });
    clients.push(client);
    return { client, store: new RedisStreamStore(client) };
  }

  const viewer = (page: string): StreamMember => ({ page, user: `u-${page}`, role: 'viewer' });
  const keys = (client: RedisClient) => client.call((r) => r.keys(`${client.prefix}*`));

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
    const names = ['m', 'o', 's', 'w'].map((kind) => `stream:{app1}:${kind}:s`);
    for (const name of names) await client.call((r) => r.pexpire(client.key(name), DAY));
    await store.join('app1', 's', viewer('na.3'), 4, T0 + 2);
    for (const name of names) {
      const ttl = await client.call((r) => r.pttl(client.key(name)));
      expect(ttl).toBeGreaterThan(7 * DAY - 60_000);
      expect(ttl).toBeLessThanOrEqual(7 * DAY);
    }
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
