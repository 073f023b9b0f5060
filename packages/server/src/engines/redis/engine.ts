import type { Logger } from 'pino';
import { newNodeId } from '../node-id.js';
import type { Engine } from '../types.js';
import { RedisAppStore } from './apps.js';
import { RedisBroker } from './broker.js';
import { RedisCallStore } from './calls.js';
import { RedisClient, type RedisTarget } from './client.js';
import { checkRedisConfig } from './config-check.js';
import { RedisDashboardSessionStore } from './dashboard-sessions.js';
import { RedisGroupStore } from './groups.js';
import { RedisHistoryStore } from './history.js';
import { RedisIdempotencyStore } from './idempotency.js';
import { RedisLimitStore } from './limits.js';
import { RedisNodeStore } from './nodes.js';
import { RedisPresenceStore } from './presence.js';
import { RedisRevocationStore } from './revocations.js';
import { RedisStreamStore } from './streams.js';
import { RedisWebhookStore } from './webhooks.js';

export type RedisEngineOptions = RedisTarget & {
  /** Put before every key and channel; several services (or tests) may share one Redis. */
  prefix?: string;
  log: Logger;
  offlineDelayMs?: number;
};

/**
 * The Redis engine: every node of a cluster on one Redis, or on a Redis Cluster (rooms, users and
 * nodes spread over its shards by hash tag; docs/scaling.md). History on streams, fan-out on pub/sub,
 * presence, calls, group calls and live streams with node leases, the webhook queue with leased
 * batches, apps; one client per node (plus the broker's subscriber connection). Refuses a Redis that
 * would evict what it keeps.
 */
export async function openRedisEngine(options: RedisEngineOptions): Promise<Engine> {
  const client = await RedisClient.open({
    ...(options.cluster === undefined ? { url: options.url } : { cluster: options.cluster }),
    ...(options.prefix === undefined ? {} : { prefix: options.prefix }),
  });
  try {
    await checkRedisConfig(client, options.log);
  } catch (error) {
    await client.close();
    throw error;
  }
  const redisBroker = new RedisBroker(client);
  const broker: Engine['broker'] = {
    publish: (events, nowMs) => redisBroker.publish(events, nowMs),
    subscribe: (topic, handler) => redisBroker.subscribe(topic, handler),
    onGap: (listener) => redisBroker.onResubscribed(listener),
    close: () => redisBroker.close(),
  };
  const history = new RedisHistoryStore(client);
  const presence = new RedisPresenceStore(
    client,
    options.offlineDelayMs === undefined ? {} : { offlineDelayMs: options.offlineDelayMs },
  );
  const webhooks = new RedisWebhookStore(client);
  // A primary that failed over (or restarted) may have lost an index entry written just before: its
  // room's reports would wait for the next repair walk (minutes). Walk at once, each time a new
  // generation is confirmed, tried again for a while if the cluster is still settling.
  // Not awaited: the walk reads every key, and the new generation must not wait for it.
  client.onNewGeneration(async () => webhooks.repairSoon());
  const apps = new RedisAppStore(client);
  return {
    kind: 'redis',
    node: newNodeId(),
    apps,
    history,
    broker,
    nodes: new RedisNodeStore(client),
    presence,
    webhooks,
    limits: new RedisLimitStore(client),
    calls: new RedisCallStore(client),
    groups: new RedisGroupStore(client),
    streams: new RedisStreamStore(client),
    dashboardSessions: new RedisDashboardSessionStore(client),
    revocations: new RedisRevocationStore(client),
    idempotency: new RedisIdempotencyStore(client),
    check: () => client.check(),
    onDataLost: (repair) => client.onNewGeneration(repair),
    close: async () => {
      webhooks.close();
      await redisBroker.close();
      await client.close();
    },
  };
}
