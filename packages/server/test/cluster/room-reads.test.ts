import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, joinRoom, startCluster, until } from './cluster.js';

/**
 * The room reads of the API counted over every node: pages on two nodes, every read sent by the
 * node SDK to a third node that has none of them.
 */
describe('cluster: room reads over every node', () => {
  let redis: TestRedis;
  let cluster: Cluster;
  const pages: RawPage[] = [];

  const open = async (node: number, user: string) => {
    const identity = await cluster.sdk(0).identityToken(user, { info: { name: user } });
    const page = await helloPage(cluster.nodeOf(node).url, cluster.app.key, identity);
    pages.push(page);
    return page;
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-room-reads', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    cluster = await startCluster({
      app,
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('room-reads') },
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await redis?.close();
  });

  it('lists, counts and pages rooms, members and kept events whose pages are on other nodes', async () => {
    const reader = cluster.sdk(2);
    // Ten rooms, each with a page on node 0 and one on node 1; the presence users are on both.
    const rooms = Array.from({ length: 10 }, (_, i) => `spread-${i}`);
    const ann = await open(0, 'ann');
    const bob = await open(1, 'bob');
    const ann2 = await open(1, 'ann');
    for (const room of rooms) {
      await joinRoom(ann, cluster.sdk(0), room, { presence: true });
      await joinRoom(bob, cluster.sdk(1), room, { presence: true });
    }
    await joinRoom(ann2, cluster.sdk(1), 'spread-0', { presence: true });

    const listed: string[] = [];
    let cursor: string | undefined;
    for (let round = 0; round < 10; round++) {
      const page = await reader.rooms({ prefix: 'spread-', limit: 3, cursor });
      expect(page.rooms.length).toBeLessThanOrEqual(3);
      for (const room of page.rooms) {
        expect(room).toEqual({ room: room.room, pages: room.room === 'spread-0' ? 3 : 2, users: 2 });
      }
      listed.push(...page.rooms.map((r) => r.room));
      cursor = page.cursor;
      if (cursor === undefined) break;
    }
    expect(listed).toEqual([...rooms].sort());

    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const kept = await cluster
        .sdk(i)
        .emit({ rooms: ['spread-3'], event: 'n', data: i, history: { 'spread-3': [3, 1] } });
      ids.push(kept['spread-3'] as string);
    }
    const info = await reader.room('spread-3');
    expect(info).toMatchObject({ room: 'spread-3', pages: 2, users: 2, kept: 3 });
    const first = await reader.history('spread-3', { last: 3, limit: 2 });
    expect(first.epoch).toBe(info.epoch);
    const rest = await reader.history('spread-3', { cursor: first.cursor });
    expect([...first.events, ...rest.events].map((e) => e.id)).toEqual(ids.slice(1));
    expect(rest.cursor).toBeUndefined();

    const one = await reader.members('spread-0', { limit: 1 });
    const two = await reader.members('spread-0', { limit: 1, cursor: one.cursor });
    expect([one.count, ...one.members, ...two.members]).toEqual([
      2,
      { user: 'ann', info: { name: 'ann' } },
      { user: 'bob', info: { name: 'bob' } },
    ]);

    // Node 0's pages go: its rooms lose a page each, and the presence users stay by their other tabs.
    await ann.close();
    await until(async () => (await reader.room('spread-5')).pages === 1, 'ann to leave spread-5');
    expect(await reader.room('spread-0')).toMatchObject({ pages: 2, users: 2 });
    expect((await reader.room('spread-5')).users).toBe(1);
  });
});
