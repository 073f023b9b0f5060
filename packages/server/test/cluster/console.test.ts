import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashDashboardPassword, newApp } from '../../src/index.js';
import { CONSOLE_PASSWORD, type ConsoleStream, openConsole, signIn } from '../console-stream.js';
import { waitFor } from '../gateway-tools.js';
import { API, post, startTestServer, type TestServer } from '../helpers.js';
import { helloPage, type RawPage } from '../pages.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';

/**
 * The live console across two nodes sharing one Redis: a console open on node A shows the traffic
 * node B handles (B learns that A watches the app, and sends A its entries as node publications),
 * filters apply to B's entries too, and B stops tapping the app once A's console closed.
 */
describe('cluster: the live console', () => {
  let redis: TestRedis;
  let a: TestServer;
  let b: TestServer;
  const app = newApp({ name: 'console-cluster', rateLimit: { perSecond: 100_000, burst: 100_000 } });
  const pages: RawPage[] = [];
  const consoles: ConsoleStream[] = [];

  beforeAll(async () => {
    redis = await startTestRedis();
    const engine = { kind: 'redis' as const, ...redisTarget(redis), prefix: uniquePrefix('console') };
    const dashboard = { passwordHash: await hashDashboardPassword(CONSOLE_PASSWORD) };
    [a, b] = await Promise.all([
      startTestServer({ app, engine, dashboard }),
      startTestServer({ app, engine, dashboard }),
    ]);
  });
  afterAll(async () => {
    for (const c of consoles) c.close();
    await Promise.all(pages.map((p) => p.close()));
    await a?.close();
    await b?.close();
    await redis?.close();
  });

  it('shows on node A what node B handles, filtered, and B stops tapping once the console closed', async () => {
    expect(b.watchedByConsole(app.key)).toBe(false);
    const cookie = await signIn(a);
    const all = await openConsole(a, app.key, cookie);
    const onlyLobby = await openConsole(a, app.key, cookie, '?room=lobby');
    consoles.push(all, onlyLobby);
    expect([all.status, onlyLobby.status]).toEqual([200, 200]);
    // B learns of the watch through Redis: it taps the app once it did.
    await waitFor(() => b.watchedByConsole(app.key), 'node B to learn that A watches the app');

    expect((await post(b, `${API}/emit`, { rooms: ['lobby'], event: 'via-b', data: { n: 1 } })).status).toBe(200);
    expect((await post(b, `${API}/emit`, { rooms: ['hall'], event: 'via-b', data: { n: 2 } })).status).toBe(200);
    const lobby = await all.next((e) => e.kind === 'emit' && e.room === 'lobby', 'the emit sent to B');
    expect(lobby).toEqual({ at: expect.any(Number), kind: 'emit', room: 'lobby', event: 'via-b', data: '{"n":1}' });
    await all.next((e) => e.kind === 'emit' && e.room === 'hall', 'the second emit sent to B');
    await onlyLobby.next((e) => e.event === 'via-b', 'the lobby emit in the filtered console');

    // A page on B: its join and send reach the console on A.
    const sdk = new Realtime({ url: b.url, key: app.key, secret: app.secret });
    const page = await helloPage(b.url, app.key, await sdk.identityToken('zoe'));
    pages.push(page);
    page.send({ t: 'join', ref: 1, room: 'lobby', token: await sdk.roomToken('lobby', { send: ['*'] }) });
    await page.next((f) => f.t === 'joined', 'joined');
    page.send({ t: 'send', ref: 2, room: 'lobby', event: 'say', data: 'hi' });
    await page.next((f) => f.t === 'sent', 'sent');
    await all.next((e) => e.kind === 'join' && e.user === 'zoe', "the join of B's page");
    expect(await onlyLobby.next((e) => e.kind === 'send', "the send of B's page")).toEqual({
      at: expect.any(Number),
      kind: 'send',
      room: 'lobby',
      user: 'zoe',
      event: 'say',
      data: '"hi"',
    });
    // An emit through A to the page's room: the page gets that event and never a console entry.
    await post(a, `${API}/emit`, { rooms: ['lobby'], event: 'via-a', data: 3 });
    await page.next((f) => f.t === 'event' && f.event === 'via-a', 'the emit through A');
    await all.next((e) => e.event === 'via-a', 'the emit through A in the console');
    expect(page.frames.filter((f) => f.t === 'event').map((f) => f.event)).toEqual(['via-a']);
    expect(onlyLobby.entries.filter((e) => e.room !== 'lobby')).toEqual([]);
    await sdk.close();

    all.close();
    onlyLobby.close();
    await waitFor(() => !b.watchedByConsole(app.key), 'node B to stop tapping the app', 10_000);
    expect(a.watchedByConsole(app.key)).toBe(false);
  });
});
