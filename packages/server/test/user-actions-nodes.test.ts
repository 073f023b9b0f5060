import { CLOSE } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../src/index.js';
import { signToken } from './gateway-tools.js';
import { API, post, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, openRawPage, type RawPage } from './pages.js';
import { type TestRedis, uniquePrefix } from './redis-server.js';
import { startTestRedis } from './test-redis.js';

/**
 * The acting routes across nodes: two service nodes on one Redis, the request to one and the pages
 * on the other. Disconnects and revocations reach every node; an idempotency key is one for all.
 */
describe('acting on users across two nodes', () => {
  let redis: TestRedis;
  let nodes: TestServer[];
  const pages: RawPage[] = [];
  const app = newApp({ name: 'nodes', rateLimit: { perSecond: 100_000, burst: 100_000 } });

  beforeAll(async () => {
    redis = await startTestRedis();
    const engine = {
      kind: 'redis' as const,
      ...(redis.cluster ? { cluster: redis.cluster } : { url: redis.url }),
      prefix: uniquePrefix('user-actions-nodes'),
    };
    nodes = await Promise.all([0, 1].map(() => startTestServer({ engine, app })));
  });
  afterAll(async () => {
    for (const page of pages) await page.close();
    for (const node of nodes ?? []) await node.close();
    await redis?.close();
  });

  const first = () => nodes[0] as TestServer;
  const second = () => nodes[1] as TestServer;
  const SECONDS = () => Math.floor(Date.now() / 1000);
  const identity = (sub: string, iat: number) => signToken({ sub, iat, exp: iat + 3600 }, { secret: app.secret });
  const pageOn = async (node: TestServer, token?: string) => {
    const page = await helloPage(node.url, app.key, token);
    pages.push(page);
    return page;
  };

  it('a disconnect on one node closes the pages of the user on the other', async () => {
    const now = SECONDS();
    const [there, here] = await Promise.all([
      pageOn(second(), await identity('ann', now)),
      pageOn(first(), await identity('ann', now)),
    ]);
    expect((await post(first(), `${API}/users/ann/disconnect`, {})).json).toEqual({ ok: true });
    expect((await there.closed).code).toBe(CLOSE.disconnected);
    expect((await here.closed).code).toBe(CLOSE.disconnected);
  });

  it('a revocation on one node closes the pages on the other, and that node refuses the token at once', async () => {
    const now = SECONDS();
    const old = await identity('bob', now - 30);
    // The other node has read the app's revocations already (its cache is warm and must be told).
    const there = await pageOn(second(), old);
    expect((await post(first(), `${API}/tokens/revoke`, { user: 'bob', before: (now - 10) * 1000 })).json).toEqual({
      ok: true,
    });
    expect((await there.closed).code).toBe(CLOSE.tokenRevoked);
    const again = await openRawPage(second().url, app.key);
    again.send({ t: 'hello', v: 1, identity: old });
    expect((await again.closed).code).toBe(CLOSE.tokenRevoked);
  });

  it('an Idempotency-Key used on one node is answered by the other with the first answer', async () => {
    const body = JSON.stringify({ rooms: ['r'], event: 'e', history: { r: [5, 1] } });
    const headers: [string, string][] = [['Idempotency-Key', 'nodes-1']];
    const one = await send(first(), { path: `${API}/emit`, body, headers });
    const other = await send(second(), { path: `${API}/emit`, body, headers });
    expect(one.status).toBe(200);
    expect(other.json).toEqual(one.json);
  });
});
