import { afterAll, beforeAll } from 'vitest';
import { startRedis, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { brokerContract } from '../contract/broker.contract.js';
import { RedisBroker } from './broker.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';
import { RedisWebhookStore } from './webhooks.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.close();
});

/** Two nodes on one Redis: each its own client and broker. */
async function twoNodes(prefix: string) {
  const one = await RedisClient.open({ url: redis.url, prefix });
  const two = await RedisClient.open({ url: redis.url, prefix });
  const brokers = [new RedisBroker(one), new RedisBroker(two)] as const;
  const cleanup = async () => {
    for (const broker of brokers) await broker.close();
    await one.close();
    await two.close();
  };
  return { one, two, brokers, cleanup };
}

brokerContract('RedisBroker, two nodes', async () => {
  const { one, brokers, cleanup } = await twoNodes(uniquePrefix('broker'));
  return {
    broker: brokers[0],
    peer: brokers[1],
    history: new RedisHistoryStore(one),
    webhooks: new RedisWebhookStore(one),
    cleanup,
  };
});
