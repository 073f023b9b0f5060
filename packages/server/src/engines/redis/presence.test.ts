import { afterAll, beforeAll } from 'vitest';
import { startRedis, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { presenceContract } from '../contract/presence.contract.js';
import { RedisClient } from './client.js';
import { RedisPresenceStore } from './presence.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.close();
});

presenceContract(
  'RedisPresenceStore, two nodes',
  async ({ offlineDelayMs }) => {
    const prefix = uniquePrefix('presence');
    const clients = [
      await RedisClient.open({ url: redis.url, prefix }),
      await RedisClient.open({ url: redis.url, prefix }),
    ];
    return {
      store: new RedisPresenceStore(clients[0] as RedisClient, { offlineDelayMs }),
      peer: new RedisPresenceStore(clients[1] as RedisClient, { offlineDelayMs }),
      cleanup: async () => {
        for (const client of clients) await client.close();
      },
    };
  },
  { leases: true },
);
