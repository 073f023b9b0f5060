import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, newApp } from '../../src/index.js';
import type { RawAnswer } from '../helpers.js';
import { helloPage, type RawPage } from '../pages.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { bounded, type ClusterNode, nodeRequest, opsGet, startNode, tally, until } from './cluster.js';

const API = '/service/realtime';
const MAX_ASKS = 3;

/**
 * Limits over three nodes on one Redis: an app's API rate limit and a user's asks in flight are
 * counted over the cluster, not per node (which would allow three times the figure).
 */
describe('cluster: limits over all nodes', () => {
  let redis: TestRedis;
  let nodes: ClusterNode[];
  // A small rate limit; the other app has room for the asks.
  const limited = newApp({ name: 'limited', rateLimit: { perSecond: 1, burst: 12 } });
  const asking = newApp({ name: 'asking', rateLimit: { perSecond: 100_000, burst: 100_000 } });
  let sdk: Realtime;
  const pages: RawPage[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    const prefix = uniquePrefix('limits');
    nodes = await Promise.all(
      [0, 1, 2].map((i) =>
        startNode(`node${i}`, {
          apps: [limited, asking],
          engine: { kind: 'redis', ...redisTarget(redis), prefix },
          limits: { maxAsksPerUser: MAX_ASKS },
          nodeLeaseMs: 3000,
        }),
      ),
    );
    sdk = new Realtime({ url: (nodes[0] as ClusterNode).url, key: asking.key, secret: asking.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk?.close();
    await Promise.all((nodes ?? []).map((n) => (n.alive() ? n.stop() : undefined)));
    await redis?.close();
  });

  const node = (i: number) => nodes[i % nodes.length] as ClusterNode;
  const request = (i: number, app: App, path: string, body?: unknown) =>
    nodeRequest(node(i), app, body === undefined ? { path } : { path, body: JSON.stringify(body) });
  const ask = (i: number, user: string, timeout: number, data: unknown = null) =>
    request(i, asking, `${API}/users/${user}/ask`, { event: 'q', data, timeout });
  const asksOn = (page: RawPage) => page.frames.filter((f) => f.t === 'ask');

  async function rateLimitedCount(n: ClusterNode): Promise<number> {
    const text = (await opsGet(n, '/metrics')).text;
    const line = text.split('\n').find((l) => l.startsWith('realtime_rate_limited_total{scope="api"} '));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  }

  it('gives an app its rate limit over every node together: about the burst accepted, the rest 429', async () => {
    const started = Date.now();
    // 36 requests spread over the nodes in turn, 12 each: per node, all 36 would pass. One after
    // another, so the bucket empties while each node takes its share (at once, one node's twelve
    // could all come first and that node refuse none).
    const answers: RawAnswer[] = [];
    for (let i = 0; i < 36; i++) {
      answers.push(await bounded(request(i, limited, `${API}/online?ids=someone`), `request ${i}`));
    }
    const elapsedS = (Date.now() - started) / 1000;
    const accepted = answers.filter((a) => a.status === 200).length;
    const label = JSON.stringify(tally(answers.map((a) => `${a.status} ${a.json.error ?? ''}`)));
    // The burst, plus what one token a second refilled while they ran.
    expect(accepted, label).toBeGreaterThanOrEqual(12);
    expect(accepted, label).toBeLessThanOrEqual(12 + Math.ceil(elapsedS));
    const refused = answers.filter((a) => a.status !== 200);
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.json.error).toBe('rate_limited');
      expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // Every node refused some: the bucket it saw was the one the others had emptied.
    const perNode = await Promise.all(nodes.map((n) => rateLimitedCount(n)));
    expect(perNode.reduce((a, b) => a + b, 0)).toBe(refused.length);
    for (const count of perNode) expect(count).toBeGreaterThan(0);
  });

  it('counts asks in flight per user over every node: the next is refused at once, before any page sees it', async () => {
    const page = await helloPage(node(0).url, asking.key, await sdk.identityToken('bob'));
    pages.push(page);
    // One ask from each node; the page holds them unanswered.
    const waiting = [0, 1, 2].map((i) => ask(i, 'bob', 10_000, i));
    await until(() => asksOn(page).length === MAX_ASKS, 'the three asks to reach the page');
    const over = await bounded(ask(1, 'bob', 10_000, 'over'), 'the ask over the limit');
    expect(over.status).toBe(429);
    expect(over.json.error).toBe('rate_limited');
    expect(over.json.message).toMatch(/3 asks waiting/);
    expect(over.headers['retry-after']).toBe('1');
    // An answered ask gives its place back, whichever node it started on.
    const fromNode2 = asksOn(page).find((f) => f.data === 2);
    page.send({ t: 'reply', ask: fromNode2?.ask, data: 'two' });
    expect((await waiting[2])?.json.replies).toMatchObject([{ data: 'two' }]);
    const again = ask(0, 'bob', 10_000, 'again');
    await until(() => asksOn(page).length === MAX_ASKS + 1, 'the ask after one was answered');
    // The refused ask never reached the page. (Asks started at once on three nodes reach it in any order.)
    const reached = asksOn(page).map((f) => f.data);
    expect(reached.slice(0, 3).sort()).toEqual([0, 1, 2]);
    expect(reached.slice(3)).toEqual(['again']);
    for (const frame of asksOn(page)) page.send({ t: 'reply', ask: frame.ask, data: 'ok' });
    const answers = await Promise.all([waiting[0], waiting[1], again]);
    expect(answers.map((a) => a?.status)).toEqual([200, 200, 200]);
  });

  it('gives back the places of a node that died, once its asks would have ended', async () => {
    const page = await helloPage(node(0).url, asking.key, await sdk.identityToken('carol'));
    pages.push(page);
    // node2 asks with a 1 s timeout and dies before it ends: its place is held 1 s + 5 s at most.
    void ask(2, 'carol', 1000, 'dying').catch(() => {});
    await until(() => asksOn(page).length === 1, 'the ask of node2 to reach the page');
    const killedAt = Date.now();
    await node(2).kill();
    const held = [ask(0, 'carol', 15_000, 'a'), ask(1, 'carol', 15_000, 'b')];
    await until(() => asksOn(page).length === 3, 'two more asks to reach the page');
    expect((await ask(0, 'carol', 15_000, 'refused')).status).toBe(429);
    // Within the dead ask's end (and a margin for the clocks), a place comes back: a refused ask is
    // answered 429 at once, a taken one reaches the page (and waits for its reply).
    let accepted: Promise<RawAnswer> | undefined;
    await until(
      async () => {
        const attempt = ask(1, 'carol', 15_000, 'back');
        const got: { answer?: RawAnswer } = {};
        attempt.then(
          (a) => {
            got.answer = a;
          },
          () => {},
        );
        await until(
          () => got.answer !== undefined || asksOn(page).some((f) => f.data === 'back'),
          'the ask to be refused or to reach the page',
          15_000,
        );
        if (got.answer === undefined) {
          accepted = attempt;
          return true;
        }
        expect(got.answer.status).toBe(429);
        return false;
      },
      "the dead node's place to come back",
      10_000,
    );
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(4000);
    await until(() => asksOn(page).some((f) => f.data === 'back'), 'the accepted ask to reach the page');
    for (const frame of asksOn(page)) page.send({ t: 'reply', ask: frame.ask, data: 'ok' });
    const answers = await Promise.all([...held, accepted as Promise<RawAnswer>]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
  }, 30_000);
});
