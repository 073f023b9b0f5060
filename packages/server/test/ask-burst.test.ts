import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLOSE } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { readConfig } from '../src/config/config-file.js';
import { type Frame, signToken, waitFor } from './gateway-tools.js';
import { API, post, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * An ask burst never costs the answering page its connection: its replies to the service's own asks
 * are not charged to its frame budget. Asks are bounded where they start instead: at most
 * `maxAsksPerUser` in flight per user (500 by default), beyond which the API answers 429 at once.
 */

let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function userPage(s: TestServer, user: string): Promise<RawPage> {
  const identity = await signToken({ sub: user, exp: Math.floor(Date.now() / 1000) + 600 }, { secret: s.app.secret });
  return helloPage(s.url, s.app.key, identity);
}

/** Replies to every ask the page gets with `{ n }` taken from the ask's data. */
function answerAsks(page: RawPage): void {
  page.ws.on('message', (raw) => {
    const frame = JSON.parse(raw.toString()) as Frame;
    if (frame.t === 'ask') page.send({ t: 'reply', ask: frame.ask, data: { echo: (frame.data as { n: number }).n } });
  });
}

const ask = (s: TestServer, user: string, n: number, timeout = 20_000) =>
  post(s, `${API}/users/${user}/ask`, { event: 'confirm', data: { n }, timeout });

describe('ask bursts', () => {
  it('450 concurrent asks with the default settings all get their reply, and the answering page stays open', async () => {
    server = await startTestServer();
    const s = server;
    const page = await userPage(s, 'alice');
    answerAsks(page);
    const answers = await Promise.all(Array.from({ length: 450 }, (_, n) => ask(s, 'alice', n)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    for (const [n, answer] of answers.entries()) {
      const replies = answer.json.replies as { data: unknown }[];
      expect(replies).toHaveLength(1);
      expect(replies[0]?.data).toEqual({ echo: n });
    }
    expect(page.ws.readyState).toBe(WebSocket.OPEN);
    expect(page.frames.filter((f) => f.t === 'error')).toEqual([]);
    // The page still works: one more ask is answered.
    expect(((await ask(s, 'alice', 1000)).json.replies as { data: unknown }[])[0]?.data).toEqual({ echo: 1000 });
    await page.close();
  }, 60_000);

  it('answers 429 rate_limited at once, with Retry-After: 1, for an ask over maxAsksPerUser in flight', async () => {
    server = await startTestServer({ limits: { maxAsksPerUser: 5 } });
    const s = server;
    const page = await userPage(s, 'bob');
    // Five asks wait: the page holds them unanswered for now.
    const waiting = Array.from({ length: 5 }, (_, n) => ask(s, 'bob', n));
    await waitFor(() => page.frames.filter((f) => f.t === 'ask').length === 5, 'the five asks to reach the page');
    const sixth = await ask(s, 'bob', 5);
    expect(sixth.status).toBe(429);
    expect(sixth.json.error).toBe('rate_limited');
    expect(sixth.json.message).toMatch(/5 asks waiting/);
    expect(sixth.headers['retry-after']).toBe('1');
    // It never reached the page.
    expect(page.frames.filter((f) => f.t === 'ask')).toHaveLength(5);
    // Another user's asks are counted apart.
    const carol = await userPage(s, 'carol');
    answerAsks(carol);
    expect((await ask(s, 'carol', 7)).status).toBe(200);
    // Once answered, the asks free their places.
    for (const frame of page.frames.filter((f) => f.t === 'ask')) page.send({ t: 'reply', ask: frame.ask, data: 'ok' });
    expect((await Promise.all(waiting)).map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    answerAsks(page);
    expect((await ask(s, 'bob', 8)).status).toBe(200);
    await page.close();
    await carol.close();
  });

  it('charges replies to asks that are not waiting on the page, not those that answer one', async () => {
    server = await startTestServer({ gateway: { framesPerSecond: 1, frameBurst: 5 } });
    const s = server;
    const page = await userPage(s, 'dave');
    answerAsks(page);
    // Twenty answers in a burst over a budget of five: none is charged, none refused.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => ask(s, 'dave', n)));
    expect(answers.map((a) => (a.json.replies as unknown[]).length)).toEqual(Array(20).fill(1));
    expect(page.frames.filter((f) => f.t === 'error')).toEqual([]);
    // Replies and declines to asks the page never got (or answered already) cost like any frame.
    const askIds = page.frames.filter((f) => f.t === 'ask').map((f) => f.ask);
    for (let i = 0; i < 6; i++) page.send({ t: i % 2 ? 'decline' : 'reply', ask: askIds[i] ?? `nope.${i}` });
    const refused = await page.next((f) => f.t === 'error', 'the error frame of a frame over budget');
    expect(refused.code).toBe('rate_limited');
    // Far over the budget the page is closed, as before.
    for (let i = 0; i < 10; i++) page.send({ t: 'reply', ask: `unknown.${i}`, data: 1 });
    expect((await page.closed).code).toBe(CLOSE.tooFast);
  });
});

describe('maxAsksPerUser in the config file', () => {
  it('is read from limits, a whole number of at least 1', () => {
    const dir = mkdtempSync(join(tmpdir(), 'realtime-ask-limit-'));
    try {
      const file = (limits: unknown) => {
        const path = join(dir, 'config.json');
        writeFileSync(path, JSON.stringify({ apps: [], limits }));
        return path;
      };
      expect(readConfig(file({ maxAsksPerUser: 5 }), false).limits).toEqual({ maxAsksPerUser: 5 });
      for (const bad of [0, -1, 1.5, '5']) {
        expect(() => readConfig(file({ maxAsksPerUser: bad }), false)).toThrow(/limits\.maxAsksPerUser must be/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
