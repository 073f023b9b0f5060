import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { presenceView, walkMembers } from '../presence-view.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, joinRoom, startCluster, until } from './cluster.js';

const THRESHOLD = 20;
const N = 300;

/**
 * A large presence room over three nodes on one Redis: each node coalesces the changes it receives,
 * and every page on every node ends with the room's count, also after a node dies with its members.
 */
describe('cluster: large presence rooms', () => {
  let redis: TestRedis;
  let cluster: Cluster;
  const pages: RawPage[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-presence-scale', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    cluster = await startCluster({
      app,
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('presence-scale') },
      nodeLeaseMs: 1500,
      gateway: { members: { threshold: THRESHOLD, pageSize: 40, minWindowMs: 150, maxWindowMs: 300, msPerMember: 1 } },
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await redis?.close();
  });

  it(`${N} members over 3 nodes: the right count everywhere, each member once by cursor, a dead node's members gone`, async () => {
    const room = 'arena';
    const users = Array.from({ length: N }, (_, i) => `u${i}`);
    const byUser = new Map<string, RawPage>();
    for (let i = 0; i < N; ) {
      const burst = users.slice(i, i + (i < THRESHOLD ? 1 : 30));
      await Promise.all(
        burst.map(async (user) => {
          const n = Number(user.slice(1));
          const identity = await cluster.sdk(0).identityToken(user);
          const page = await helloPage(cluster.nodeOf(n).url, cluster.app.key, identity);
          pages.push(page);
          byUser.set(user, page);
          await joinRoom(page, cluster.sdk(n), room, { presence: true });
        }),
      );
      i += burst.length;
    }
    const countIs = (list: string[], count: number) => () =>
      list.every((user) => presenceView(byUser.get(user) as RawPage, room).count === count);
    await until(countIs(users, N), `every page on every node to count ${N}`, 20_000);
    // Pages that had the whole list keep it whole, whichever node the changes came from.
    for (const user of users.slice(0, 6)) expect(presenceView(byUser.get(user) as RawPage, room).users.size).toBe(N);
    // Pages that joined the large room got the changes coalesced, never one event per member.
    for (const user of users.slice(THRESHOLD + 1)) {
      const view = presenceView(byUser.get(user) as RawPage, room);
      expect(view.memberEvents).toBe(0);
      expect(view.partial).toBe(true);
    }
    // Each node pages through the same members: all of them, each once.
    for (const user of users.slice(-3)) {
      const walked = await walkMembers(byUser.get(user) as RawPage, room, 1_000_000);
      expect(walked).toHaveLength(N);
      expect(new Set(walked)).toEqual(new Set(users));
    }

    // node2 dies with its pages: another node sweeps them, and every page left counts the rest.
    await cluster.nodes[2]?.kill();
    const alive = users.filter((_, i) => i % 3 !== 2);
    await until(countIs(alive, alive.length), `every page left to count ${alive.length}`, 20_000);
    // The count can come before the last of the departures: a frame carries the newest count, and the
    // sweep's departures may span two windows. Pages that had the whole list end with the rest.
    const wholeList = alive.slice(0, 4);
    const listsAlive = () =>
      wholeList.every((user) => presenceView(byUser.get(user) as RawPage, room).users.size === alive.length);
    await until(listsAlive, 'pages with the whole list to drop the dead node’s members', 20_000);
    for (const user of wholeList) {
      expect([...presenceView(byUser.get(user) as RawPage, room).users].sort()).toEqual([...alive].sort());
    }
    const walked = await walkMembers(byUser.get(alive[alive.length - 1] as string) as RawPage, room, 2_000_000);
    expect(walked.sort()).toEqual([...alive].sort());
  }, 120_000);
});
