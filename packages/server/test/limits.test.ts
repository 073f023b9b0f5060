import { Realtime } from '@realtime/node';
import { afterEach, describe, expect, it } from 'vitest';
import type { EmbeddedStores } from '../src/engines/embedded.js';
import { StoreError } from '../src/engines/store-error.js';
import type { LimitStore } from '../src/engines/types.js';
import { manualClock } from './gateway-tools.js';
import { API, fetchPlain, post, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * The limit store (the API rate limit per app, asks in flight per user) failing: the request answers
 * 503 and nothing of it happens, never a 500 and never a request let through uncounted. Run on the
 * embedded engine (answering later in the async-stores project), whose store hook can make the limit
 * store fail alone; the Redis store's own failures are StoreErrors (engines/redis/limits.test.ts).
 */

/** What fails now: the store's calls by name. */
const failing = new Set<keyof LimitStore>();

function failingLimits(stores: EmbeddedStores): EmbeddedStores {
  const real = stores.limits;
  if (!real) throw new Error('the embedded engine made no limit store');
  const check = (call: keyof LimitStore) => {
    if (failing.has(call)) throw new StoreError('unavailable');
  };
  return {
    ...stores,
    limits: {
      take: (...args) => {
        check('take');
        return real.take(...args);
      },
      peek: (...args) => {
        check('peek');
        return real.peek(...args);
      },
      acquire: (...args) => {
        check('acquire');
        return real.acquire(...args);
      },
      release: (...args) => {
        check('release');
        return real.release(...args);
      },
    },
  };
}

let server: TestServer | undefined;
const pages: RawPage[] = [];
let sdk: Realtime | undefined;

afterEach(async () => {
  failing.clear();
  await Promise.all(pages.splice(0).map((p) => p.close()));
  await sdk?.close();
  sdk = undefined;
  await server?.close();
  server = undefined;
});

async function start(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  server = await startTestServer({
    engine: { kind: 'embedded', asyncStores: process.env.REALTIME_TEST_ENGINE === 'embedded-async' },
    wrapStores: failingLimits,
    ...options,
  });
  sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  return server;
}

async function userPage(s: TestServer, user: string): Promise<RawPage> {
  const page = await helloPage(s.url, s.app.key, await (sdk as Realtime).identityToken(user));
  pages.push(page);
  return page;
}

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('a limit store that fails', () => {
  it('makes an API request answer 503 unavailable, with nothing delivered; the next one goes through', async () => {
    const s = await start();
    const page = await userPage(s, 'alice');
    failing.add('take');
    const refused = await post(s, `${API}/emit`, { users: ['alice'], event: 'x', data: 1 });
    expect(refused.status).toBe(503);
    expect(refused.json).toMatchObject({ ok: false, error: 'unavailable' });
    expect(refused.headers['retry-after']).toBeUndefined();
    failing.clear();
    const sent = await post(s, `${API}/emit`, { users: ['alice'], event: 'x', data: 2 });
    expect(sent.status).toBe(200);
    await page.next((f) => f.t === 'event' && f.event === 'x' && f.data === 2, 'the second event');
    expect(page.frames.filter((f) => f.t === 'event' && f.event === 'x').map((f) => f.data)).toEqual([2]);
    // Neither counted as over the app's rate.
    const metrics = (await fetchPlain(s.url, '/metrics')).text;
    expect(sample(metrics, 'realtime_rate_limited_total{scope="api"}')).toBe(0);
    expect(sample(metrics, 'realtime_api_requests_total{route="emit",status="503"}')).toBe(1);
  });

  it('makes an ask answer 503 unavailable before any page sees it', async () => {
    const s = await start();
    const page = await userPage(s, 'bob');
    failing.add('acquire');
    const refused = await post(s, `${API}/users/bob/ask`, { event: 'q', timeout: 2000 });
    expect(refused.status).toBe(503);
    expect(refused.json.error).toBe('unavailable');
    failing.clear();
    const asked = post(s, `${API}/users/bob/ask`, { event: 'q', data: 'second', timeout: 5000 });
    const frame = await page.next((f) => f.t === 'ask', 'the second ask');
    expect(frame.data).toBe('second');
    page.send({ t: 'reply', ask: frame.ask, data: 'yes' });
    expect((await asked).json.replies).toMatchObject([{ data: 'yes' }]);
    expect(page.frames.filter((f) => f.t === 'ask')).toHaveLength(1);
  });

  it('still answers an ask whose place could not be given back; the place ends by itself later', async () => {
    const clock = manualClock();
    const s = await start({ limits: { maxAsksPerUser: 2 }, now: clock.now });
    const page = await userPage(s, 'carol');
    page.ws.on('message', (raw) => {
      const frame = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (frame.t === 'ask') page.send({ t: 'reply', ask: frame.ask, data: 'ok' });
    });
    const ask = () => post(s, `${API}/users/carol/ask`, { event: 'q', timeout: 1000 });
    failing.add('release');
    for (let i = 0; i < 2; i++) {
      const answer = await ask();
      expect(answer.status).toBe(200);
      expect(answer.json.replies).toMatchObject([{ data: 'ok' }]);
    }
    failing.clear();
    // Both places stay held until they end (the ask's timeout and 5 s): the third is refused.
    expect((await ask()).status).toBe(429);
    clock.advance(5999);
    expect((await ask()).status).toBe(429);
    clock.advance(1);
    expect((await ask()).status).toBe(200);
    expect((await ask()).status).toBe(200);
  });
});
