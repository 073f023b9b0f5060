/**
 * Loss detection per shard on a real Redis Cluster: a primary that fails over (its replica may have
 * missed writes) starts a new epoch for the rooms of its slots only; rooms of the other primaries keep
 * theirs, and a room moved by a reshard keeps its epoch (nothing was lost).
 */
import calculateSlot from 'cluster-key-slot';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from '../../../test/redis-cluster.js';
import { uniquePrefix, untilItWorks } from '../../../test/redis-server.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';
import { roomKeys } from './keys.js';

const KEEP: [number, number] = [100, 24];
const T0 = 1_700_000_000_000;

let cluster: TestRedisCluster;
let client: RedisClient;
let history: RedisHistoryStore;
const prefix = uniquePrefix('shard-gen');

beforeAll(async () => {
  cluster = await startRedisCluster({ primaries: 3, replicas: 1 });
  client = await RedisClient.open({ cluster: cluster.urls, prefix, generationCheckMs: 200 });
  history = new RedisHistoryStore(client);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await cluster?.close();
});

/** One room per primary: `port -> room`. */
async function roomPerPrimary(): Promise<Map<number, string>> {
  const primaries = (await cluster.nodes()).filter((node) => node.role === 'primary');
  const rooms = new Map<number, string>();
  for (let i = 0; i < 2000 && rooms.size < primaries.length; i++) {
    const slot = calculateSlot(roomKeys(prefix, 'app1', `r${i}`)[0]);
    const owner = primaries.find((node) => node.slots.some(([a, b]) => slot >= a && slot <= b));
    if (owner && !rooms.has(owner.port)) rooms.set(owner.port, `r${i}`);
  }
  return rooms;
}

const epochOf = async (room: string) => (await history.last('app1', room, 1, T0)).epoch;

describe('replicated', () => {
  it('answers once the write is on the primary’s replica', async () => {
    const [meta] = roomKeys(prefix, 'app1', 'copied');
    // Right after the cluster formed, the client's slot map may not list the replica yet (it then has
    // nothing to wait for and answers at once): wait, bounded, until it does.
    const redis = client.redis as Cluster;
    for (let tries = 0; tries < 100 && (redis.slots[calculateSlot(meta)]?.length ?? 0) < 2; tries++) {
      redis.refreshSlotsCache();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(redis.slots[calculateSlot(meta)]?.length, 'a replica in the client’s slot map').toBeGreaterThanOrEqual(2);
    await history.append('app1', 'copied', { event: 'e', data: '"x"' }, KEEP, T0);
    expect(await client.replicated(meta)).toBe(true);
    const primary = await cluster.primaryOf(meta);
    const replica = (await cluster.nodes()).find((node) => node.primaryId === primary.id);
    if (!replica) throw new Error('no replica');
    const { Redis } = await import('ioredis');
    const direct = new Redis({ host: '127.0.0.1', port: replica.port, lazyConnect: true });
    try {
      await direct.connect();
      await direct.call('READONLY');
      expect(await direct.hget(meta, 'l')).toMatch(/^\d+-\d+$/);
    } finally {
      direct.disconnect();
    }
  });
});

describe('generation per shard', () => {
  it('renews the epochs of the failed primary’s rooms only', async () => {
    const rooms = await roomPerPrimary();
    expect(rooms.size).toBe(3);
    const before = new Map<string, string>();
    for (const room of rooms.values()) {
      await history.append('app1', room, { event: 'e', data: '1' }, KEEP, T0);
      before.set(room, await epochOf(room));
    }
    const [, failed] = [...rooms][0] as [number, string];
    await cluster.killPrimary(calculateSlot(roomKeys(prefix, 'app1', failed)[0]));
    // The next write to each room, once the node knows the new primary.
    await untilItWorks(async () => {
      for (const room of rooms.values()) await history.append('app1', room, { event: 'e', data: '2' }, KEEP, T0 + 1);
    }, 20_000);
    for (const room of rooms.values()) {
      const epoch = await epochOf(room);
      if (room === failed) expect(epoch, room).not.toBe(before.get(room));
      else expect(epoch, room).toBe(before.get(room));
    }
    // A resume with the old epoch on the failed shard is truncated; on the others it is not.
    for (const room of rooms.values()) {
      const resumed = await history.since('app1', room, `${T0}-0`, T0 + 2, undefined, before.get(room));
      expect(resumed.truncated, room).toBe(room === failed);
    }
  }, 60_000);

  it('keeps the epoch of a room whose slot moved to another primary', async () => {
    const room = 'moving';
    await history.append('app1', room, { event: 'e', data: '1' }, KEEP, T0);
    const epoch = await epochOf(room);
    const slot = calculateSlot(roomKeys(prefix, 'app1', room)[0]);
    const from = await cluster.primaryOf(slot);
    const to = (await cluster.nodes()).find((node) => node.role === 'primary' && node.port !== from.port);
    if (!to) throw new Error('no other primary');
    await cluster.reshard(from.port, to.port, [slot]);
    const id = await untilItWorks(() => history.append('app1', room, { event: 'e', data: '2' }, KEEP, T0 + 1), 20_000);
    expect(await epochOf(room)).toBe(epoch);
    const resumed = await history.since('app1', room, `${T0}-0`, T0 + 2, undefined, epoch);
    expect(resumed.truncated).toBe(false);
    expect(resumed.events.map((event) => event.id)).toEqual([id]);
  }, 60_000);
});
