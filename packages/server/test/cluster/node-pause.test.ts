import { CLOSE } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { API } from '../helpers.js';
import { helloPage, isEvent, type RawPage } from '../pages.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { bounded, type Cluster, joinRoom, nodeRequest, startCluster, until } from './cluster.js';

type Frame = Record<string, unknown>;
const userOf = (f: Frame) => (f.data as { user?: unknown } | undefined)?.user;
/** Short, so the pause outlasts it in a second or two (what ships is 15 s). */
const LEASE_MS = 1500;

/**
 * A node stopped for real (SIGSTOP) past its lease: the other node sweeps its pages. Continued
 * (SIGCONT), it finds its lease taken and closes its pages with 4100; they come back and count again.
 */
describe('cluster: a node paused past its lease', () => {
  let redis: TestRedis;
  let cluster: Cluster;
  const pages: RawPage[] = [];

  const open = async (i: number, user: string) => {
    const identity = await cluster.sdk(1).identityToken(user);
    const page = await helloPage(cluster.nodeOf(i).url, cluster.app.key, identity);
    pages.push(page);
    return page;
  };
  const online = async (i: number): Promise<unknown> =>
    (await nodeRequest(cluster.nodeOf(i), cluster.app, { path: `${API}/online?ids=alice,bob` })).json.online;

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-pause', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    cluster = await startCluster({
      app,
      count: 2,
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('pause') },
      nodeLeaseMs: LEASE_MS,
      offlineDelayMs: 200,
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await redis?.close();
  });

  it('closes the paused node’s pages with 4100 when it runs again; they resume and are counted again', async () => {
    const alice = await open(0, 'alice');
    await joinRoom(alice, cluster.sdk(0), 'lobby', { presence: true });
    const bob = await open(1, 'bob');
    const joined = await joinRoom(bob, cluster.sdk(1), 'lobby', { presence: true });
    expect((joined.members as Frame[]).map((m) => m.user)).toEqual(['alice', 'bob']);

    const paused = cluster.nodeOf(0);
    process.kill(paused.pid, 'SIGSTOP');
    try {
      // The other node sweeps it once its lease ran out: bob hears alice left, and she goes offline.
      await bob.next((f) => isEvent('$member.left', 'lobby')(f) && userOf(f) === 'alice', 'alice to leave');
      await until(async () => JSON.stringify(await online(1)) === '["bob"]', 'alice to be offline');
    } finally {
      process.kill(paused.pid, 'SIGCONT');
    }

    // Running again, the node finds its lease taken: its page is told to reconnect.
    const closed = await bounded(alice.closed, "the paused node's page to be closed", 8000);
    expect(closed.code).toBe(CLOSE.shutdown);
    // It resumes (the SDK reconnects) and counts again, on every node.
    const again = await open(0, 'alice');
    await joinRoom(again, cluster.sdk(0), 'lobby', { presence: true });
    await bob.next((f) => isEvent('$member.joined', 'lobby')(f) && userOf(f) === 'alice', 'alice to be back');
    await until(async () => JSON.stringify(await online(1)) === '["alice","bob"]', 'alice to be online again');
    const carol = await open(1, 'carol');
    const seen = await joinRoom(carol, cluster.sdk(1), 'lobby', { presence: true });
    expect((seen.members as Frame[]).map((m) => m.user).sort()).toEqual(['alice', 'bob', 'carol']);

    // The 4100 close of alice's old page reports nothing twice: the sweep said she left, once. A
    // barrier on the paused node: a page there joins and leaves after that close, and bob hears it.
    const dave = await open(0, 'dave');
    await joinRoom(dave, cluster.sdk(0), 'lobby', { presence: true });
    await dave.close();
    await bob.next((f) => isEvent('$member.left', 'lobby')(f) && userOf(f) === 'dave', 'dave to leave');
    const left = bob.frames.filter((f) => isEvent('$member.left', 'lobby')(f) && userOf(f) === 'alice');
    expect(left).toHaveLength(1);
    expect(await online(1)).toEqual(['alice', 'bob']);
  });
});
