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

const OUTAGE_MS = 5000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Redis stopped for five seconds, then back with its data (AOF, fsync always): no node restarts. */
describe('cluster: Redis away for 5 s', () => {
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
        body: JSON.stringify({ rooms: [room], event: 'e', data, history: { [room]: [1000, 1] } }),
      }),
      `an emit to node ${i}`,
    );
  const online = (i: number): Promise<RawAnswer> =>
    bounded(nodeRequest(cluster.nodeOf(i), cluster.app, { path: `${API}/online?ids=a,b` }), `GET /online of node ${i}`);
  const ready = (i: number): Promise<RawAnswer> =>
    bounded(opsGet(cluster.nodeOf(i), `${API}/ready`), `GET /ready of node ${i}`);

  beforeAll(async () => {
    redis = await startRedis({ persistence: 'aof-always' });
    const app = newApp({ name: 'cluster-outage', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    cluster = await startCluster({
      app,
      engine: { kind: 'redis', url: redis.url, prefix: uniquePrefix('outage') },
      offlineDelayMs: 400,
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await redis?.close();
  });

  it('answers 503 unavailable (never hangs) while Redis is away, and recovers without a restart', async () => {
    const room = 'out';
    const watchers = await Promise.all([0, 1, 2].map((i) => open(i)));
    const epochs: unknown[] = [];
    for (const [i, p] of watchers.entries()) epochs.push((await joinRoom(p, cluster.sdk(i), room)).epoch);
    expect((await emit(0, room, 'before')).status).toBe(200);
    for (const p of watchers) await p.next((f) => f.t === 'event' && f.data === 'before', 'the event before');

    await redis.stop();
    const stoppedAt = Date.now();
    const api: string[] = [];
    const readiness: string[] = [];
    // Rounds of requests to every node until the outage is over; each answers or the test fails.
    for (let round = 0; Date.now() - stoppedAt < OUTAGE_MS; round++) {
      const answers = await Promise.all(
        [0, 1, 2].flatMap((i) => [emit(i, room, round), online(i), ready(i).then((a) => ({ ...a, ready: true }))]),
      );
      for (const a of answers) {
        const line = `${a.status} ${a.status === 200 ? '' : a.json.error}`.trim();
        ('ready' in a ? readiness : api).push(line);
      }
      await sleep(200); // pacing the rounds through the outage, not waiting for anything
    }
    expect(tally(api), 'API answers while Redis is away').toEqual(
      expect.objectContaining({ '503 unavailable': expect.any(Number) }),
    );
    const unexpected = Object.keys(tally(api)).filter((a) => a !== '200' && a !== '503 unavailable');
    expect(unexpected, `answers: ${JSON.stringify(tally(api))}`).toEqual([]);
    expect(new Set(readiness)).toEqual(new Set(['503 unavailable']));
    for (const node of cluster.nodes) expect(node.alive(), `${node.name}: ${node.output()}`).toBe(true);

    await redis.restart({ keepData: true });
    for (let i = 0; i < 3; i++) {
      await until(async () => (await ready(i)).status === 200, `node ${i} ready again`, 15_000);
      await until(async () => (await emit(i, room, `back ${i}`)).status === 200, `node ${i} to take emits again`);
      expect((await online(i)).status).toBe(200);
    }
    // The pages get events sent through every node: those open all along, and those the service
    // closed to resume (4100-4199), resumed on the same node with since and epoch as a client does.
    // Redis kept everything (AOF, fsync always): the resume is not truncated and keeps its epoch.
    for (let i = 0; i < 3; i++) expect((await emit(i, room, `after ${i}`)).status).toBe(200);
    const isLast = (f: Record<string, unknown>) => f.t === 'event' && f.room === room && f.data === 'after 2';
    for (const [w, p] of watchers.entries()) {
      let page = p;
      const outcome = await arrivedOrClosed(p, isLast, `the events after the outage at watcher ${w}, or its close`);
      if (outcome !== 'arrived') {
        expect(outcome, `the close code of watcher ${w}`).toBeGreaterThanOrEqual(4100);
        expect(outcome).toBeLessThan(4200);
        page = await open(w);
        const resumed = await joinRoom(page, cluster.sdk(w), room, {}, { since: lastId(p, room), epoch: epochs[w] });
        expect(resumed.truncated).toBeUndefined();
        expect(resumed.epoch).toBe(epochs[w]);
        await page.next(isLast, `the events after the outage at watcher ${w} after it resumed`);
      }
      const got = [...p.frames, ...(page === p ? [] : page.frames)]
        .filter((f) => f.t === 'event' && f.room === room && typeof f.data === 'string' && f.data.startsWith('after'))
        .map((f) => f.data);
      expect(got, `watcher ${w}`).toEqual(['after 0', 'after 1', 'after 2']);
    }
    for (const node of cluster.nodes) expect(node.alive()).toBe(true);
  });
});
