import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import {
  type Cluster,
  compareIds,
  eventsOf,
  joinRoom,
  pagesOpen,
  startCluster,
  strictlyRising,
  until,
} from './cluster.js';

const HISTORY: [number, number] = [1000, 1];

/** Events, resume and online across three nodes on one Redis: page i on node i % 3. */
describe('cluster: delivery across nodes', () => {
  let redis: TestRedis;
  let cluster: Cluster;
  const pages: RawPage[] = [];

  const open = async (i: number, user?: string) => {
    const identity = user === undefined ? undefined : await cluster.sdk(0).identityToken(user);
    const page = await helloPage(cluster.nodeOf(i).url, cluster.app.key, identity);
    pages.push(page);
    return page;
  };
  let marks = 0;
  /** Emits a marker and waits until each page has it: what was published before has arrived by then. */
  const barrier = async (room: string, via: number, ...to: RawPage[]) => {
    const n = ++marks;
    await cluster.sdk(via).emit({ rooms: [room], event: 'mark', data: n });
    for (const p of to) await p.next((f) => f.t === 'event' && f.room === room && f.event === 'mark' && f.data === n);
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    cluster = await startCluster({
      app,
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('delivery') },
      offlineDelayMs: 500,
      gateway: { framesPerSecond: 5000, frameBurst: 5000 },
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await redis?.close();
  });

  it('emit and batch sent to any node reach every page on every node once, in order, ids rising', async () => {
    const room = 'fanout';
    const watchers = await Promise.all(Array.from({ length: 6 }, (_, i) => open(i)));
    for (const [i, p] of watchers.entries()) await joinRoom(p, cluster.sdk(i), room);
    // One user with a tab on each node: an event to the user reaches every tab.
    const tabs = await Promise.all([0, 1, 2].map((i) => open(i, 'fan-user')));

    const expected: string[] = [];
    for (let k = 0; k < 12; k++) {
      const ids = await cluster.sdk(k).emit({ rooms: [room], event: 'e', data: k, history: { [room]: HISTORY } });
      expected.push(ids[room] as string);
    }
    const batch = Array.from({ length: 8 }, (_, j) => ({
      rooms: [room],
      event: 'e',
      data: 12 + j,
      history: { [room]: HISTORY },
    }));
    for (const ids of await cluster.sdk(1).emitBatch(batch)) expected.push(ids[room] as string);
    for (const ids of await cluster.sdk(2).emitBatch(batch.map((e) => ({ ...e, data: e.data + 8 })))) {
      expected.push(ids[room] as string);
    }
    await cluster.sdk(2).emit({ users: ['fan-user'], event: 'u', data: 'for you' });
    expect(strictlyRising(expected)).toBe(true);

    await barrier(room, 0, ...watchers);
    for (const [i, p] of watchers.entries()) {
      const got = eventsOf(p, room, 'e');
      expect(
        got.map((f) => f.data),
        `page ${i} on node ${i % 3}`,
      ).toEqual(Array.from({ length: 28 }, (_, k) => k));
      expect(got.map((f) => f.id)).toEqual(expected);
    }
    for (const tab of tabs) {
      await tab.next((f) => f.t === 'event' && f.event === 'u', 'the user event');
      // The user event came before the marker on every node; any copy would have arrived by now.
      await cluster.sdk(0).emit({ users: ['fan-user'], event: 'u-mark', data: null });
      await tab.next((f) => f.t === 'event' && f.event === 'u-mark', 'the user marker');
      expect(tab.frames.filter((f) => f.t === 'event' && f.event === 'u')).toEqual([
        { t: 'event', event: 'u', data: 'for you' },
      ]);
    }
  });

  it('resume on another node with since and epoch: exactly the missed events, once, in order, then live ones', async () => {
    const room = 'resume';
    const first = await open(0);
    const joined = await joinRoom(first, cluster.sdk(0), room);
    expect(typeof joined.epoch).toBe('string');
    const seen = await cluster.sdk(1).emit({ rooms: [room], event: 'e', data: 'seen', history: { [room]: HISTORY } });
    await first.next((f) => f.t === 'event' && f.room === room && f.data === 'seen');
    await first.close();

    const missed: string[] = [];
    for (let k = 0; k < 5; k++) {
      const ids = await cluster.sdk(k).emit({ rooms: [room], event: 'e', data: k, history: { [room]: HISTORY } });
      missed.push(ids[room] as string);
    }
    const again = await open(1);
    const resumed = await joinRoom(again, cluster.sdk(1), room, {}, { since: seen[room], epoch: joined.epoch });
    expect(resumed.truncated).toBeUndefined();
    expect(resumed.epoch).toBe(joined.epoch);
    expect(resumed.replay).toBe(5);
    const live = await cluster.sdk(2).emit({ rooms: [room], event: 'e', data: 'live', history: { [room]: HISTORY } });
    await barrier(room, 0, again);
    const got = eventsOf(again, room, 'e');
    expect(got.map((f) => f.data)).toEqual([0, 1, 2, 3, 4, 'live']);
    expect(got.map((f) => f.id)).toEqual([...missed, live[room]]);
  });

  it('ids rise strictly at every page while two nodes take emits and page sends for one room at once', async () => {
    const room = 'race';
    const senders = [await open(0, 'sender-a'), await open(1, 'sender-b')];
    for (const [i, p] of senders.entries()) await joinRoom(p, cluster.sdk(i), room, { send: ['p'] });
    const watchers = await Promise.all([0, 1, 2].map((i) => open(i)));
    for (const [i, p] of watchers.entries()) await joinRoom(p, cluster.sdk(i), room);

    const perSource = 40;
    const emitsFrom = async (node: number) => {
      const ids: string[] = [];
      // Eight requests in flight per node, so the two nodes' emits interleave.
      for (let k = 0; k < perSource; k += 8) {
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, j) =>
            cluster
              .sdk(node)
              .emit({ rooms: [room], event: 'h', data: `${node}:${k + j}`, history: { [room]: HISTORY } }),
          ),
        );
        for (const a of answers) ids.push(a[room] as string);
      }
      return ids;
    };
    const sendsFrom = async (s: number) => {
      const page = senders[s] as RawPage;
      const base = 1000 * (s + 1);
      for (let k = 0; k < perSource; k++) page.send({ t: 'send', ref: base + k, room, event: 'p', data: `${s}:${k}` });
      const ids: string[] = [];
      for (let k = 0; k < perSource; k++) {
        const sent = await page.next((f) => f.t === 'sent' && f.ref === base + k, `sent ${base + k}`);
        ids.push(sent.id as string);
      }
      return ids;
    };
    const [fromA, fromB, sentA, sentB] = await Promise.all([emitsFrom(0), emitsFrom(1), sendsFrom(0), sendsFrom(1)]);
    const all = [...fromA, ...fromB, ...sentA, ...sentB];
    expect(new Set(all).size).toBe(4 * perSource);
    const ordered = [...all].sort(compareIds);

    await barrier(room, 2, ...watchers, ...senders);
    const idsAt = (p: RawPage) => [...eventsOf(p, room, 'h'), ...eventsOf(p, room, 'p')].map((f) => f.id as string);
    const arrival = (p: RawPage) =>
      eventsOf(p, room)
        .filter((f) => f.event !== 'mark')
        .map((f) => f.id as string);
    for (const [i, p] of watchers.entries()) {
      expect(strictlyRising(arrival(p)), `watcher on node ${i}`).toBe(true);
      expect(arrival(p)).toEqual(ordered);
      expect(idsAt(p)).toHaveLength(4 * perSource);
    }
    // A sender gets everything but its own sends, in the same order.
    for (const [s, p] of senders.entries()) {
      const own = new Set(s === 0 ? sentA : sentB);
      expect(strictlyRising(arrival(p)), `sender on node ${s}`).toBe(true);
      expect(arrival(p)).toEqual(ordered.filter((id) => !own.has(id)));
    }
  });

  it('GET /online on any node sees users whose only page is on another node', async () => {
    const users = ['on-0', 'on-1', 'on-2'];
    const own = await Promise.all(users.map((u, i) => open(i, u)));
    for (let via = 0; via < 3; via++) {
      expect(await cluster.sdk(via).online([...users, 'nobody'])).toEqual(users);
    }
    // on-0's only page closes on node 0: every node sees it go offline after the offline delay.
    const before = await pagesOpen(cluster.nodeOf(0));
    await (own[0] as RawPage).close();
    await until(async () => (await pagesOpen(cluster.nodeOf(0))) === before - 1, 'node 0 to drop the page');
    for (let via = 0; via < 3; via++) {
      await until(
        async () => (await cluster.sdk(via).online(users)).join() === 'on-1,on-2',
        `node ${via} to see on-0 offline`,
      );
    }
  });

  it('ask across nodes: the first reply from a tab on another node answers; with all, every tab on every node', async () => {
    // The user's tabs are on nodes 1 and 2; the ask goes through node 0, which holds none of them.
    const tabs = await Promise.all(
      [1, 2].map(async (i) => ({ page: await open(i, 'asked-user'), label: `node-${i}` })),
    );
    /** Each tab answers the ask whose data is `n` with its node's name. */
    const answer = (n: number) =>
      Promise.all(
        tabs.map(async ({ page, label }) => {
          const question = await page.next((f) => f.t === 'ask' && f.data === n, `ask ${n} on ${label}`);
          page.send({ t: 'reply', ask: question.ask, data: { from: label } });
        }),
      );
    const first = cluster.sdk(0).ask('asked-user', { event: 'q', data: 1, timeout: 5000 });
    await answer(1);
    const firstReplies = await first;
    expect(firstReplies).toHaveLength(1);
    const [reply] = firstReplies;
    expect(['node-1', 'node-2']).toContain((reply?.data as { from: string } | undefined)?.from);

    const all = cluster.sdk(0).ask('asked-user', { event: 'q', data: 2, timeout: 1500, all: true });
    await answer(2);
    const allReplies = await all;
    expect(allReplies.map((r) => (r.data as { from: string }).from).sort()).toEqual(['node-1', 'node-2']);
  });
});
