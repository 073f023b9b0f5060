/**
 * A publish to rooms on two shards of a real Redis Cluster while one shard has no primary: the
 * room on the live shard takes its events (stored, ids rising), the other takes nothing, and the
 * publish answers which (PublishIncomplete), never hangs.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from '../../../test/redis-cluster.js';
import { PublishIncomplete } from '../publish-incomplete.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';
import { roomKeys } from './keys.js';
import { RedisPublisher } from './publisher.js';

const PREFIX = 'shard:';
const KEEP: [number, number] = [100, 1];

let cluster: TestRedisCluster;

beforeAll(async () => {
  // No replicas, and a node timeout long enough that the other shards serve while one is down.
  cluster = await startRedisCluster({ primaries: 3, replicas: 0, nodeTimeoutMs: 60_000 });
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

it('stores and publishes the rooms of live shards and answers which rooms did not take it', async () => {
  const client = await RedisClient.open({ cluster: cluster.urls, prefix: PREFIX, commandTimeoutMs: 1000 });
  try {
    const publisher = new RedisPublisher(client);
    const history = new RedisHistoryStore(client);
    // Two rooms on different primaries.
    const live = 'a';
    const liveOwner = (await cluster.primaryOf(roomKeys(PREFIX, 'app1', live)[0])).port;
    let down = '';
    for (let n = 0; n < 100 && down === ''; n++) {
      const owner = await cluster.primaryOf(roomKeys(PREFIX, 'app1', `b${n}`)[0]);
      if (owner.port !== liveOwner) down = `b${n}`;
    }
    expect(down).not.toBe('');
    const event = (room: string, data: string) => ({
      kind: 'room' as const,
      app: 'app1',
      room,
      event: 'e',
      data,
      keep: KEEP,
    });
    const [first] = await publisher.publish([event(live, '1'), event(down, '1')], Date.now());

    const stopped = await cluster.primaryOf(roomKeys(PREFIX, 'app1', down)[0]);
    if (stopped.pid !== undefined) process.kill(stopped.pid, 'SIGKILL');

    const failure = await publisher.publish([event(live, '2'), event(down, '2')], Date.now()).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(PublishIncomplete);
    const { ids, failed } = failure as PublishIncomplete;
    expect(failed).toEqual([1]);
    expect(ids[1]).toBeUndefined();
    const kept = await history.last('app1', live, 10, Date.now());
    expect(kept.events.map((e) => e.data)).toEqual(['1', '2']);
    expect(kept.events.map((e) => e.id)).toEqual([first, ids[0]]);
  } finally {
    await client.close();
  }
}, 60_000);
