import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { type Receiver, startReceiver } from '../receiver.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, type ClusterNode, eventsOf, joinRoom, pagesOpen, startCluster, until } from './cluster.js';

type Frame = Record<string, unknown>;
const userOf = (f: Frame) => (f.data as { user?: unknown } | undefined)?.user;

/** Presence and its webhook events when one user's tabs or one room's pages are on several nodes. */
describe('cluster: presence and webhooks across nodes', () => {
  let redis: TestRedis;
  let receiver: Receiver;
  let cluster: Cluster;
  const pages: RawPage[] = [];

  const open = async (i: number, user: string) => {
    const identity = await cluster.sdk(0).identityToken(user, { info: { name: user } });
    const page = await helloPage(cluster.nodeOf(i).url, cluster.app.key, identity);
    pages.push(page);
    return page;
  };
  const join = (i: number, page: RawPage, room: string) => joinRoom(page, cluster.sdk(i), room, { presence: true });
  let marks = 0;
  const barrier = async (room: string, via: number, ...to: RawPage[]) => {
    const n = ++marks;
    await cluster.sdk(via).emit({ rooms: [room], event: 'mark', data: n });
    for (const p of to) await p.next((f) => f.t === 'event' && f.room === room && f.event === 'mark' && f.data === n);
  };
  const members = (p: RawPage, room: string, event: '$member.joined' | '$member.left', user: string) =>
    eventsOf(p, room, event).filter((f) => userOf(f) === user);
  /** Closes pages and waits until their nodes have let them go. */
  const closeOn = async (entries: [ClusterNode, RawPage][]) => {
    const before = new Map<ClusterNode, number>();
    for (const [node] of entries) before.set(node, (before.get(node) ?? (await pagesOpen(node))) - 1);
    await Promise.all(entries.map(([, p]) => p.close()));
    for (const [node, expected] of before) {
      await until(async () => (await pagesOpen(node)) === expected, `${node.name} to drop its closed pages`);
    }
  };
  /** Webhook events about a room or a user. */
  const reported = (type: string, match: { room?: string; user?: string }) =>
    receiver
      .events(type)
      .filter(
        (e) =>
          (match.room === undefined || e.room === match.room) && (match.user === undefined || e.user === match.user),
      );

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-presence', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    receiver = await startReceiver(app);
    cluster = await startCluster({
      app: { ...app, webhook: receiver.url },
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('presence') },
      offlineDelayMs: 400,
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await receiver?.close();
    await redis?.close();
  });

  it('a user with tabs on two nodes: one $member.joined, listed once, $member.left only when the last tab closes', async () => {
    const room = 'tabs';
    const obs = await open(2, 'obs');
    await join(2, obs, room);
    const tab1 = await open(0, 'alice');
    await join(0, tab1, room);
    await obs.next((f) => f.event === '$member.joined' && userOf(f) === 'alice', 'alice joined');
    const tab2 = await open(1, 'alice');
    const second = await join(1, tab2, room);
    expect((second.members as Frame[]).map((m) => m.user).sort()).toEqual(['alice', 'obs']);

    const late = await open(2, 'late');
    const roster = (await join(2, late, room)).members as Frame[];
    expect([...roster].sort((a, b) => String(a.user).localeCompare(String(b.user)))).toEqual([
      { user: 'alice', info: { name: 'alice' } },
      { user: 'late', info: { name: 'late' } },
      { user: 'obs', info: { name: 'obs' } },
    ]);
    await barrier(room, 1, obs, tab1, tab2);
    expect(members(obs, room, '$member.joined', 'alice')).toHaveLength(1);
    expect(members(tab2, room, '$member.joined', 'alice')).toHaveLength(0);

    await closeOn([[cluster.nodeOf(0), tab1]]);
    await barrier(room, 2, obs, tab2);
    expect(eventsOf(obs, room, '$member.left')).toHaveLength(0);

    await closeOn([[cluster.nodeOf(1), tab2]]);
    await obs.next((f) => f.event === '$member.left' && userOf(f) === 'alice', 'alice left');
    await barrier(room, 0, obs, late);
    expect(members(obs, room, '$member.left', 'alice')).toHaveLength(1);
    expect(members(late, room, '$member.left', 'alice')).toHaveLength(1);
    expect(members(obs, room, '$member.joined', 'alice')).toHaveLength(1);
  });

  it('tabs of one user joining and closing at the same moment on three nodes: one joined, one left', async () => {
    const room = 'rush';
    const obs = await open(0, 'rush-obs');
    await join(0, obs, room);
    const tabs = await Promise.all([0, 1, 2].map((i) => open(i, 'carol')));
    await Promise.all(tabs.map((tab, i) => join(i, tab, room)));
    // `$member.joined` goes out after the first tab's `joined`, so it may trail a later event: wait for it.
    await obs.next((f) => f.event === '$member.joined' && userOf(f) === 'carol', 'carol joined');
    await barrier(room, 1, obs);
    expect(members(obs, room, '$member.joined', 'carol')).toHaveLength(1);

    await closeOn(tabs.map((tab, i) => [cluster.nodeOf(i), tab]));
    await obs.next((f) => f.event === '$member.left' && userOf(f) === 'carol', 'carol left');
    await barrier(room, 2, obs);
    expect(members(obs, room, '$member.left', 'carol')).toHaveLength(1);
    const newcomer = await open(1, 'rush-late');
    expect(((await join(1, newcomer, room)).members as Frame[]).map((m) => m.user).sort()).toEqual([
      'rush-late',
      'rush-obs',
    ]);
  });

  it('webhooks: each event once when one user and one room have pages on every node', async () => {
    const room = 'hooked';
    // bob opens a tab on every node at once, dan one on node 2; all join the room at once.
    const bobs = await Promise.all([0, 1, 2].map((i) => open(i, 'bob')));
    const dan = await open(2, 'dan');
    await Promise.all([...bobs.map((tab, i) => join(i, tab, room)), join(2, dan, room)]);
    await receiver.waitFor(
      () => reported('member.joined', { room }).length >= 2 && reported('user.online', { user: 'dan' }).length >= 1,
      'member.joined of bob and dan',
    );

    await closeOn([
      ...bobs.map((tab, i): [ClusterNode, RawPage] => [cluster.nodeOf(i), tab]),
      [cluster.nodeOf(2), dan],
    ]);
    await receiver.waitFor(
      () =>
        reported('room.vacated', { room }).length >= 1 &&
        reported('user.offline', { user: 'bob' }).length >= 1 &&
        reported('user.offline', { user: 'dan' }).length >= 1,
      'room.vacated and both users offline',
    );
    // A later user's whole life reported: anything doubled above was recorded long before it.
    const marker = await open(1, 'hook-marker');
    await closeOn([[cluster.nodeOf(1), marker]]);
    await receiver.waitFor(() => reported('user.offline', { user: 'hook-marker' }).length >= 1, 'the marker offline');

    const counts = Object.fromEntries(
      [
        ['user.online bob', reported('user.online', { user: 'bob' })],
        ['user.online dan', reported('user.online', { user: 'dan' })],
        ['room.occupied', reported('room.occupied', { room })],
        ['member.joined bob', reported('member.joined', { room, user: 'bob' })],
        ['member.joined dan', reported('member.joined', { room, user: 'dan' })],
        ['member.left bob', reported('member.left', { room, user: 'bob' })],
        ['member.left dan', reported('member.left', { room, user: 'dan' })],
        ['room.vacated', reported('room.vacated', { room })],
        ['user.offline bob', reported('user.offline', { user: 'bob' })],
        ['user.offline dan', reported('user.offline', { user: 'dan' })],
      ].map(([name, list]) => [name as string, (list as unknown[]).length]),
    );
    expect(counts).toEqual({
      'user.online bob': 1,
      'user.online dan': 1,
      'room.occupied': 1,
      'member.joined bob': 1,
      'member.joined dan': 1,
      'member.left bob': 1,
      'member.left dan': 1,
      'room.vacated': 1,
      'user.offline bob': 1,
      'user.offline dan': 1,
    });
    const ids = receiver.events().map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
