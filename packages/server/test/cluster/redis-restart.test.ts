import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { API, type RawAnswer } from '../helpers.js';
import { helloPage, type RawPage } from '../pages.js';
import { startRedis, type TestRedis, uniquePrefix } from '../redis-server.js';
import {
  arrivedOrClosed,
  bounded,
  type Cluster,
  joinRoom,
  lastId,
  nodeRequest,
  opsGet,
  startCluster,
  tally,
  until,
} from './cluster.js';

const HISTORY: [number, number] = [1000, 1];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long a node keeps an app it read (CachedAppStore's default). */
const APP_CACHE_MS = 1000;

/** Redis restarted empty (no persistence) while nodes take emits and hold pages. */
describe('cluster: Redis restarted without persistence during traffic', () => {
  let redis: TestRedis;
  let cluster: Cluster;
  const pages: RawPage[] = [];

  const open = async (i: number) => {
    const page = await helloPage(cluster.nodeOf(i).url, cluster.app.key);
    pages.push(page);
    return page;
  };
  const emit = (i: number, room: string, data: unknown): Promise<RawAnswer> =>
    bounded(
      nodeRequest(cluster.nodeOf(i), cluster.app, {
        path: `${API}/emit`,
        body: JSON.stringify({ rooms: [room], event: 'e', data, history: { [room]: HISTORY } }),
      }),
      `an emit to node ${i}`,
    );

  beforeAll(async () => {
    redis = await startRedis({ persistence: 'none' });
    const app = newApp({ name: 'cluster-restart', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    cluster = await startCluster({
      app,
      engine: { kind: 'redis', url: redis.url, prefix: uniquePrefix('restart') },
      offlineDelayMs: 400,
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await redis?.close();
  });

  it('no node crashes, emits work again, pages get events, an old since+epoch resumes truncated', async () => {
    const room = 'rr';
    const watchers = await Promise.all([0, 1, 2].map((i) => open(i)));
    const epochs: unknown[] = [];
    for (const [i, p] of watchers.entries()) epochs.push((await joinRoom(p, cluster.sdk(i), room)).epoch);
    const first = await open(0);
    const joined = await joinRoom(first, cluster.sdk(0), room);
    const before = await emit(1, room, 'before');
    expect(before.status).toBe(200);
    const beforeId = (before.json.ids as Record<string, string>)[room];
    for (const p of [first, ...watchers]) {
      await p.next((f) => f.t === 'event' && f.data === 'before', 'the event before the restart');
    }
    await first.close();

    // Emits round the nodes all along; each must answer, 200 or 503 while Redis is away.
    const answers: string[] = [];
    let running = true;
    const traffic = (async () => {
      for (let k = 0; running; k++) {
        const answer = await emit(k, room, k);
        answers.push(answer.status === 200 ? '200' : `${answer.status} ${answer.json.error}`);
        await sleep(10); // pacing the traffic, not waiting for anything
      }
    })();
    await until(() => answers.length >= 10, 'traffic before the restart');
    await redis.restart({ keepData: false });
    // Every node takes an emit again without being restarted.
    for (let i = 0; i < 3; i++) {
      let last: RawAnswer | undefined;
      await until(
        async () => {
          last = await emit(i, room, `after ${i}`);
          return last.status === 200;
        },
        `node ${i} to take emits again`,
        20_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; last answer ${last?.status} ${last?.text}`);
      });
    }
    // Traffic goes on past what a node remembers (apps are cached for a second, by each node's own
    // clock in its own process, which no test clock reaches): the nodes must work from what Redis
    // holds now, not from what they read before the restart.
    const cachedUntil = Date.now() + APP_CACHE_MS + 200;
    const sent = answers.length;
    await until(() => Date.now() > cachedUntil && answers.length >= sent + 20, 'traffic past the app cache');
    running = false;
    await traffic;

    const unexpected = Object.keys(tally(answers)).filter((a) => a !== '200' && a !== '503 unavailable');
    expect(unexpected, `answers: ${JSON.stringify(tally(answers))}`).toEqual([]);
    for (const node of cluster.nodes) {
      expect(node.alive(), `${node.name} alive; its log: ${node.output()}`).toBe(true);
      expect((await opsGet(node, `${API}/health`)).status).toBe(200);
      await until(async () => (await opsGet(node, `${API}/ready`)).status === 200, `${node.name} ready`);
    }

    for (let i = 0; i < 3; i++) {
      const again = await emit(i, room, `still ${i}`);
      expect(`${again.status} ${again.text}`, `an emit to node ${i} after the restart`).toMatch(/^200 /);
    }
    // The pages that stayed open get what is emitted now, from any node.
    const marker = await emit(2, room, 'marker');
    expect(marker.status).toBe(200);
    // A page the service closed to resume (4100-4199) does so as a client would, on the same node:
    // its history is gone, so it hears that it is truncated, and gets what is kept since.
    const isMarker = (f: Record<string, unknown>) => f.t === 'event' && f.room === room && f.data === 'marker';
    for (const [i, p] of watchers.entries()) {
      const outcome = await arrivedOrClosed(p, isMarker, `the marker at watcher ${i}, or its close`);
      if (outcome === 'arrived') continue;
      expect(outcome, `the close code of watcher ${i}`).toBeGreaterThanOrEqual(4100);
      expect(outcome).toBeLessThan(4200);
      const again = await open(i);
      const resumed = await joinRoom(again, cluster.sdk(i), room, {}, { since: lastId(p, room), epoch: epochs[i] });
      expect(resumed.truncated).toBe(true);
      await again.next(isMarker, `the marker at watcher ${i} after it resumed`);
    }

    // The history the old id belongs to is gone: resuming with it says so, with a new epoch.
    const back = await open(1);
    const resumed = await joinRoom(back, cluster.sdk(1), room, {}, { since: beforeId, epoch: joined.epoch });
    expect(resumed.truncated).toBe(true);
    expect(typeof resumed.epoch).toBe('string');
    expect(resumed.epoch).not.toBe(joined.epoch);
  });
});
