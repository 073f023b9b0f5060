/**
 * The setup the Redis Cluster end-to-end suites share: a Redis Cluster of their own (3 primaries),
 * a webhook receiver, and 3 service nodes on the cluster under one key prefix, started before the
 * file's tests and ended after (pages the tests opened first). Call inside a describe.
 */
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll } from 'vitest';
import { newApp, newAppKey } from '../../src/index.js';
import { type Receiver, startReceiver } from '../receiver.js';
import { startRedisCluster, type TestRedisCluster } from '../redis-cluster.js';
import { uniquePrefix } from '../redis-server.js';
import { type Cluster, type NodeOptions, startCluster } from './cluster.js';

export interface ShardedService {
  redis(): TestRedisCluster;
  receiver(): Receiver;
  cluster(): Cluster;
  /** The key prefix the nodes use. */
  prefix: string;
  /** Pages to close before the nodes stop. */
  pages: Array<{ close(): unknown }>;
}

export function useShardedService(
  name: string,
  options: {
    replicas: number;
    node?: Omit<NodeOptions, 'apps' | 'engine' | 'allowPrivateWebhooks'>;
    /**
     * A key whose shard must also hold the app's first API rate-limit bucket (`{<app>:0}`): the app
     * key is drawn until it does, so a test can fail one shard holding both.
     */
    appBucketWith?: string;
  },
): ShardedService {
  let redis: TestRedisCluster | undefined;
  let receiver: Receiver | undefined;
  let cluster: Cluster | undefined;
  const prefix = uniquePrefix(name);
  const pages: Array<{ close(): unknown }> = [];
  beforeAll(async () => {
    redis = await startRedisCluster({ primaries: 3, replicas: options.replicas });
    const key = options.appBucketWith === undefined ? undefined : await appKeyOnShardOf(redis, options.appBucketWith);
    const app = newApp({
      name,
      rateLimit: { perSecond: 100_000, burst: 100_000 },
      ...(key === undefined ? {} : { key }),
    });
    receiver = await startReceiver(app);
    cluster = await startCluster({
      app: { ...app, webhook: receiver.url },
      engine: { kind: 'redis', cluster: redis.urls, prefix },
      allowPrivateWebhooks: true,
      gateway: { framesPerSecond: 5000, frameBurst: 5000 },
      ...options.node,
    });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(pages.map((page) => page.close()));
    await cluster?.close();
    await receiver?.close();
    await redis?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the sharded service is not started yet: use it inside a test');
    return value;
  };
  return {
    redis: () => started(redis),
    receiver: () => started(receiver),
    cluster: () => started(cluster),
    prefix,
    pages,
  };
}

/** An app key whose first rate-limit bucket's slot has the same primary as `key`'s. */
async function appKeyOnShardOf(redis: TestRedisCluster, key: string): Promise<string> {
  const owner = await redis.primaryOf(calculateSlot(key));
  const owned = (slot: number) => owner.slots.some(([from, to]) => slot >= from && slot <= to);
  // A third of keys qualify: bounded far above what is needed.
  for (let tries = 0; tries < 1000; tries += 1) {
    const candidate = newAppKey();
    if (owned(calculateSlot(`{${candidate}:0}`))) return candidate;
  }
  throw new Error(`no app key found whose first rate-limit bucket is on the shard of ${key}`);
}
