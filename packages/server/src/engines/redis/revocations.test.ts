import { afterAll, beforeAll } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { revocationsContract } from '../contract/revocations.contract.js';
import { RedisClient } from './client.js';
import { RedisRevocationStore } from './revocations.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

revocationsContract('RedisRevocationStore, two nodes', async () => {
  const prefix = uniquePrefix('revocations');
  const clients = [
    await RedisClient.open({ ...redisTarget(redis), prefix }),
    await RedisClient.open({ ...redisTarget(redis), prefix }),
  ];
  return {
    store: new RedisRevocationStore(clients[0] as RedisClient),
    // Another node on the same Redis, with its own connection.
    peer: new RedisRevocationStore(clients[1] as RedisClient),
    // A node restarted: a new connection to the Redis that kept everything.
    reopen: async () => {
      const client = await RedisClient.open({ ...redisTarget(redis), prefix });
      clients.push(client);
      return new RedisRevocationStore(client);
    },
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});
