import { afterAll, beforeAll } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { webhookContract } from '../contract/webhooks.contract.js';
import { RedisClient } from './client.js';
import { RedisWebhookStore } from './webhooks.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

webhookContract('RedisWebhookStore', async () => {
  const prefix = uniquePrefix('webhooks');
  const open = () => RedisClient.open({ ...redisTarget(redis), prefix });
  const clients: RedisClient[] = [await open(), await open()];
  return {
    store: new RedisWebhookStore(clients[0] as RedisClient),
    // Another node on the same Redis.
    peer: new RedisWebhookStore(clients[1] as RedisClient),
    reopen: async () => {
      await clients[0]?.close();
      const client = await open();
      clients.push(client);
      return new RedisWebhookStore(client);
    },
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});
