import { Realtime } from '@realtime/node';
import { SOCKET_PATH } from '@realtime/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newApp } from '../../src/index.js';
import { startRedis, type TestRedis, uniquePrefix } from '../redis-server.js';
import { type Cluster, startCluster, until } from './cluster.js';

const MEMBERS = 10_000;
/** Pages opening and joining at once: enough to be quick, few enough for the handshake caps. */
const AT_ONCE = 200;
/** The bound on frames to pages for 10,000 members joining one room (it was ~50M before). */
const MAX_FRAMES = 1_500_000;
const COUNT = /"count":(\d+)/;
/** Every page comes from 127.0.0.1: the per-address cap is raised past them. */
const LIMITS = { maxPages: 20_000, maxPagesPerAddress: 20_000 };

/**
 * One page as light as it can be: 10,000 of them live in this process. It keeps only how many
 * frames came and the room's member count as last told (`joined`, `members` frames), never the
 * frames themselves (together about 1 GB of member lists).
 */
interface LightPage {
  ws: WebSocket;
  frames: number;
  count: number;
}

async function openMember(url: string, site: string, identity: string, roomToken: string): Promise<LightPage> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${SOCKET_PATH}?site=${encodeURIComponent(site)}`);
  const page: LightPage = { ws, frames: 0, count: -1 };
  const joined = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no joined within 30 s')), 30_000);
    ws.on('message', (data) => {
      page.frames++;
      const text = data.toString();
      if (text.startsWith('{"t":"welcome"')) {
        ws.send(JSON.stringify({ t: 'join', ref: 1, room: 'arena', token: roomToken }));
        return;
      }
      if (text.startsWith('{"t":"error"')) {
        clearTimeout(timer);
        reject(new Error(text));
        return;
      }
      const joinedFrame = text.startsWith('{"t":"joined"');
      if (joinedFrame || text.startsWith('{"t":"members"')) {
        const count = COUNT.exec(text);
        // A small room's `joined` lists every member instead of counting them.
        if (count) page.count = Number(count[1]);
        else if (joinedFrame) page.count = (JSON.parse(text) as { members: unknown[] }).members.length;
      } else if (text.includes('"event":"$member.joined"') && page.count >= 0) {
        page.count++;
      }
      if (joinedFrame) {
        clearTimeout(timer);
        resolve();
      }
    });
    ws.once('open', () => ws.send(JSON.stringify({ t: 'hello', v: 1, identity })));
    ws.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
  await joined;
  return page;
}

/**
 * The presence target as a test (its timings are the benchmark's, `npm run bench:presence`):
 * 10,000 members join one presence room; every page ends with the right count, and the frames sent
 * to pages stay under 1.5M in all. Once on one node, once on three nodes on Redis.
 */
describe('10,000 members in one presence room', () => {
  const pages: LightPage[] = [];
  let redis: TestRedis | undefined;
  let cluster: Cluster | undefined;

  afterAll(async () => {
    for (const page of pages) page.ws.terminate();
    await cluster?.close();
    await redis?.close();
  });

  async function fillRoom(nodes: Cluster): Promise<void> {
    const sdk = new Realtime({ url: nodes.nodeOf(0).url, key: nodes.app.key, secret: nodes.app.secret });
    try {
      for (let start = 0; start < MEMBERS; start += AT_ONCE) {
        const opened = await Promise.all(
          Array.from({ length: Math.min(AT_ONCE, MEMBERS - start) }, async (_, k) => {
            const i = start + k;
            const user = `m${i}`;
            const identity = await sdk.identityToken(user);
            const token = await sdk.roomToken('arena', { presence: true, userId: user });
            return openMember(nodes.nodeOf(i).url, nodes.app.key, identity, token);
          }),
        );
        pages.push(...opened);
      }
    } finally {
      await sdk.close();
    }
    await until(() => pages.every((page) => page.count === MEMBERS), `every page to count ${MEMBERS}`, 60_000);
    const frames = pages.reduce((sum, page) => sum + page.frames, 0);
    expect(frames).toBeLessThan(MAX_FRAMES);
    for (const page of pages) expect(page.count).toBe(MEMBERS);
  }

  const app = () => newApp({ name: 'presence-10k', rateLimit: { perSecond: 100_000, burst: 100_000 } });

  it('one node: every page counts 10,000, frames under 1.5M', async () => {
    cluster = await startCluster({ app: app(), count: 1, engine: { kind: 'embedded' }, limits: LIMITS });
    await fillRoom(cluster);
    for (const page of pages.splice(0)) page.ws.terminate();
    await cluster.close();
    cluster = undefined;
  }, 180_000);

  it('three nodes on Redis: every page on every node counts 10,000, frames under 1.5M', async () => {
    redis = await startRedis();
    cluster = await startCluster({
      app: app(),
      engine: { kind: 'redis', url: redis.url, prefix: uniquePrefix('presence-10k') },
      limits: LIMITS,
    });
    await fillRoom(cluster);
  }, 180_000);
});
