/**
 * The sharded subscriber on a real Redis Cluster (3 primaries, 1 replica each): it hears each topic
 * on its own shard, keeps hearing through a primary failover and a slot move, and names to the gap
 * listeners only the topics of the shard that dropped.
 */
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisCluster, type TestRedisCluster } from '../../../test/redis-cluster.js';
import { uniquePrefix, untilItWorks } from '../../../test/redis-server.js';
import { type Publication, roomTopic } from '../broker.js';
import { RedisClient } from './client.js';
import { encodePublication } from './publication-codec.js';
import { RedisShardedSubscriber } from './sharded-subscriber.js';

let cluster: TestRedisCluster;
let client: RedisClient;
let subscriber: RedisShardedSubscriber;
const prefix = uniquePrefix('sharded');

beforeAll(async () => {
  cluster = await startRedisCluster({ primaries: 3, replicas: 1 });
  client = await RedisClient.open({ cluster: cluster.urls, prefix });
  subscriber = new RedisShardedSubscriber(client);
}, 60_000);

afterAll(async () => {
  await subscriber?.close();
  await client?.close();
  await cluster?.close();
});

/** One room per primary: rooms whose topics' slots the three primaries own. */
async function roomsOnEachPrimary(): Promise<Map<number, string>> {
  const nodes = (await cluster.nodes()).filter((node) => node.role === 'primary');
  const byPort = new Map<number, string>();
  for (let i = 0; i < 1000 && byPort.size < nodes.length; i++) {
    const slot = calculateSlot(prefix + roomTopic('app1', `room${i}`));
    const owner = nodes.find((node) => node.slots.some(([a, b]) => slot >= a && slot <= b));
    if (owner && !byPort.has(owner.port)) byPort.set(owner.port, `room${i}`);
  }
  return byPort;
}

const publish = (room: string, data: string) => {
  const { head, body } = encodePublication({ kind: 'room', app: 'app1', room, event: 'e', data, presence: true });
  return client.call((redis) => redis.spublish(prefix + roomTopic('app1', room), `${head}\n${body}`));
};

const dataOf = (publication: Publication) => (publication.kind === 'room' ? publication.data : '');

describe('RedisShardedSubscriber', () => {
  it('hears every shard, and after a failover names only the failed shard’s topics and hears them again', async () => {
    const rooms = await roomsOnEachPrimary();
    expect(rooms.size).toBe(3);
    const heard = new Map<string, string[]>();
    for (const room of rooms.values()) {
      heard.set(room, []);
      await subscriber.subscribe(roomTopic('app1', room), (p) => heard.get(room)?.push(dataOf(p)));
    }
    for (const room of rooms.values()) await publish(room, `before ${room}`);
    await untilItWorks(async () => {
      for (const room of rooms.values()) if (heard.get(room)?.length !== 1) throw new Error('not yet');
    });
    const gaps: string[][] = [];
    subscriber.onResubscribed((topics) => gaps.push([...topics]));

    const [killedPort, killedRoom] = [...rooms][0] as [number, string];
    await cluster.killPrimary(calculateSlot(prefix + roomTopic('app1', killedRoom)));
    await untilItWorks(async () => {
      if (gaps.length === 0) throw new Error('no gap told yet');
    }, 20_000);
    expect(gaps.flat()).toEqual([roomTopic('app1', killedRoom)]);
    expect(killedPort).toBeGreaterThan(0);

    // Heard again on the promoted replica, and the other shards never stopped.
    await untilItWorks(async () => {
      await publish(killedRoom, `after ${killedRoom}`);
      if (!heard.get(killedRoom)?.includes(`after ${killedRoom}`)) throw new Error('not heard yet');
    }, 20_000);
    for (const room of rooms.values()) {
      if (room === killedRoom) continue;
      await publish(room, `after ${room}`);
    }
    await untilItWorks(async () => {
      for (const room of rooms.values()) if (!heard.get(room)?.includes(`after ${room}`)) throw new Error('not yet');
    });
  }, 60_000);

  it('keeps hearing a topic whose slot moved to another primary, and names it as cut off', async () => {
    const room = 'moving';
    const topic = roomTopic('app1', room);
    const slot = calculateSlot(prefix + topic);
    const heard: string[] = [];
    const gaps: string[][] = [];
    await subscriber.subscribe(topic, (p) => heard.push(dataOf(p)));
    subscriber.onResubscribed((topics) => gaps.push([...topics]));
    const from = await cluster.primaryOf(slot);
    const to = (await cluster.nodes()).find((node) => node.role === 'primary' && node.port !== from.port);
    if (!to) throw new Error('no other primary');
    await cluster.reshard(from.port, to.port, [slot]);
    await untilItWorks(async () => {
      await publish(room, 'moved');
      if (!heard.includes('moved')) throw new Error('not heard yet');
    }, 20_000);
    expect((await cluster.primaryOf(slot)).port).toBe(to.port);
    await untilItWorks(async () => {
      if (gaps.length === 0) throw new Error('no gap told yet');
    });
    expect(gaps.flat()).toEqual([topic]);
  }, 60_000);
});
