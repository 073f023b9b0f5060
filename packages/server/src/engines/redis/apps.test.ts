import calculateSlot from 'cluster-key-slot';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { touchedKeys } from '../../../test/touched-keys.js';
import { appStoreContract } from '../contract/apps.contract.js';
import type { App } from '../types.js';
import { RedisAppStore } from './apps.js';
import { RedisClient } from './client.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

appStoreContract('RedisAppStore', async () => {
  const prefix = uniquePrefix('apps');
  const clients: RedisClient[] = [await RedisClient.open({ ...redisTarget(redis), prefix })];
  return {
    store: new RedisAppStore(clients[0] as RedisClient),
    // The CLI's own connection to the same Redis.
    other: async () => {
      const client = await RedisClient.open({ ...redisTarget(redis), prefix });
      clients.push(client);
      return new RedisAppStore(client);
    },
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});

describe('RedisAppStore keys', () => {
  const clients: RedisClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  const open = async (prefix = uniquePrefix('app-keys')): Promise<RedisClient> => {
    const client = await RedisClient.open({ ...redisTarget(redis), prefix });
    clients.push(client);
    return client;
  };
  const app: App = {
    key: 'k1',
    secret: 's1',
    name: 'One',
    webhook: 'https://example.com/hook',
    features: ['history'],
    rateLimit: { perSecond: 10, burst: 20 },
  };

  it('keeps every app key in one slot, so an upsert or a removal is one script', async () => {
    const client = await open();
    const store = new RedisAppStore(client);
    const touched = await touchedKeys(client, async () => {
      await store.upsert(app);
      await store.setSecret('k1', 's2');
      await store.list();
      await store.remove('k1');
    });
    const apps = touched.filter((key) => key !== client.key('apps'));
    expect(apps.length).toBeGreaterThan(0);
    expect(new Set(apps.map((key) => calculateSlot(key)))).toEqual(new Set([calculateSlot('{apps}')]));
  });

  it('adopts the apps kept under the names from before (app:<key> and apps), once', async () => {
    const client = await open();
    await client.call((r) =>
      r.hset(client.key('app:k1'), {
        key: 'k1',
        secret: 's1',
        name: 'One',
        webhook: 'https://example.com/hook',
        features: '["history"]',
        perSecond: '10',
        burst: '20',
      }),
    );
    await client.call((r) => r.sadd(client.key('apps'), 'k1', 'gone'));
    const store = new RedisAppStore(client);
    expect(await store.get('k1')).toEqual(app);
    expect(await store.list()).toEqual([app]);
    for (const old of ['app:k1', 'apps']) expect(await client.call((r) => r.exists(client.key(old)))).toBe(0);
    // Another store (the CLI) sees it under the new names.
    expect(await new RedisAppStore(await open(client.prefix)).get('k1')).toEqual(app);
  });
});
