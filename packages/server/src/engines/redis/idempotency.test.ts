import { afterAll, beforeAll } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { idempotencyContract } from '../contract/idempotency.contract.js';
import { RedisClient } from './client.js';
import { RedisIdempotencyStore } from './idempotency.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

idempotencyContract('RedisIdempotencyStore, two nodes', async () => {
  const prefix = uniquePrefix('idempotency');
  const clients = [
    await RedisClient.open({ ...redisTarget(redis), prefix }),
    await RedisClient.open({ ...redisTarget(redis), prefix }),
  ];
  return {
    store: new RedisIdempotencyStore(clients[0] as RedisClient),
    // Another node on the same Redis, with its own connection.
    peer: new RedisIdempotencyStore(clients[1] as RedisClient),
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});
