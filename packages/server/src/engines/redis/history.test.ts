import { afterAll, beforeAll } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix, untilItWorks } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { historyContract } from '../contract/history.contract.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

historyContract('RedisHistoryStore', async () => {
  const prefix = uniquePrefix('history');
  const clients: RedisClient[] = [await RedisClient.open({ ...redisTarget(redis), prefix })];
  const first = clients[0] as RedisClient;
  return {
    store: new RedisHistoryStore(first),
    // Another node (or this one restarted) on the same Redis.
    reopen: async () => {
      await clients.at(-1)?.close();
      const client = await RedisClient.open({ ...redisTarget(redis), prefix });
      clients.push(client);
      return new RedisHistoryStore(client);
    },
    // Redis restarted without persistence: the same store carries on once it has reconnected. On
    // the shared test cluster (which other files use too) this prefix's keys are deleted instead:
    // the rooms' metas are gone, as after a primary restarted empty.
    wipe: async () => {
      const client = clients.at(-1) as RedisClient;
      if (redis.cluster) {
        await client.forEachPrimary(async (node) => {
          const keys = await node.keys(`${prefix}*`);
          for (const key of keys) await node.del(key);
        });
        return;
      }
      await redis.restart({ keepData: false });
      await untilItWorks(() => client.check());
    },
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});
