import { afterAll, beforeAll } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { appStoreContract } from '../contract/apps.contract.js';
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
