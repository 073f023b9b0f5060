import { randomBytes } from 'node:crypto';
import { Realtime } from '@realtime/node';
import { LIMITS, sealingKey, sealWithKey } from '@realtime/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConsoleTap } from '../src/dashboard/console-tap.js';
import { MemoryFanout } from '../src/engines/memory/fanout.js';
import type { Broker } from '../src/engines/types.js';
import { hashDashboardPassword, newApp } from '../src/index.js';
import { createLogger } from '../src/log.js';
import { CONSOLE_PASSWORD, type ConsoleStream, type Entry, openConsole, signIn } from './console-stream.js';
import { manualClock, waitFor } from './gateway-tools.js';
import { API, post, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * The dashboard's live console over real sockets: a signed-in operator's Server-Sent Events stream of
 * an app's emits, page joins, sends, leaves, presence, asks and their replies, and webhook tries,
 * filtered by room, user and event; the limit of consoles per node; the bound per console (a reader
 * that does not read gets a `dropped` count); and the watch ending with the stream.
 */

const isEmit = (event: string, room?: string) => (e: Entry) =>
  e.kind === 'emit' && e.event === event && (room === undefined || e.room === room);

describe('the live console', () => {
  let server: TestServer;
  let receiver: Receiver;
  let cookie: string;
  let sdk: Realtime;
  const app = newApp({ name: 'console', rateLimit: { perSecond: 100_000, burst: 100_000 } });
  const consoles: ConsoleStream[] = [];
  const pages: RawPage[] = [];

  const open = async (query = '') => {
    const stream = await openConsole(server, app.key, cookie, query);
    consoles.push(stream);
    expect(stream.status, stream.text).toBe(200);
    // Watched on this node once the stream began: what is tapped from now on reaches it.
    expect(server.watchedByConsole(app.key)).toBe(true);
    return stream;
  };
  const emit = (body: Record<string, unknown>) => post(server, `${API}/emit`, body);
  const page = async (user?: string) => {
    const opened = await helloPage(server.url, app.key, user === undefined ? undefined : await sdk.identityToken(user));
    pages.push(opened);
    return opened;
  };
  let refs = 0;
  const join = async (p: RawPage, room: string, rules: Parameters<Realtime['roomToken']>[1] = {}) => {
    const ref = ++refs;
    p.send({ t: 'join', ref, room, token: await sdk.roomToken(room, rules) });
    return p.next((f) => f.ref === ref && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
  };

  beforeAll(async () => {
    receiver = await startReceiver(app);
    app.webhook = receiver.url;
    server = await startTestServer({
      app,
      allowPrivateWebhooks: true,
      dashboard: { passwordHash: await hashDashboardPassword(CONSOLE_PASSWORD) },
      webhooks: { windowMs: 20 },
    });
    sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
    cookie = await signIn(server);
  });
  afterEach(async () => {
    for (const c of consoles.splice(0)) c.close();
    await Promise.all(pages.splice(0).map((p) => p.close()));
    // Every console closed: the app is watched nowhere, so its traffic is not tapped.
    await waitFor(() => !server.watchedByConsole(app.key), 'the watch to end with the last console');
  });
  afterAll(async () => {
    await sdk?.close();
    await server?.close();
    await receiver?.close();
  });

  it('is not watched before a console opens, and answers an event stream', async () => {
    expect(server.watchedByConsole(app.key)).toBe(false);
    const stream = await open();
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-store');
    await stream.until(() => stream.comments.includes('open'), 'the opening comment');
  });

  it('shows emits to rooms and users, one entry per target, data as JSON text', async () => {
    const stream = await open();
    const before = Date.now();
    expect((await emit({ rooms: ['lobby', 'hall'], users: ['ann'], event: 'hello', data: { n: 1 } })).status).toBe(200);
    const lobby = await stream.next(isEmit('hello', 'lobby'), 'the emit to lobby');
    expect(lobby).toEqual({ at: expect.any(Number), kind: 'emit', room: 'lobby', event: 'hello', data: '{"n":1}' });
    expect(lobby.at).toBeGreaterThanOrEqual(before - 1000);
    await stream.next(isEmit('hello', 'hall'), 'the emit to hall');
    expect(await stream.next((e) => e.kind === 'emit' && e.user === 'ann', 'the emit to ann')).toEqual({
      at: expect.any(Number),
      kind: 'emit',
      user: 'ann',
      event: 'hello',
      data: '{"n":1}',
    });
    // A batch: each event's entries, in order.
    const batch = await post(server, `${API}/emit/batch`, {
      events: [
        { rooms: ['lobby'], event: 'first', data: 1 },
        { rooms: ['lobby'], event: 'second', data: 2 },
      ],
    });
    expect(batch.status).toBe(200);
    await stream.next(isEmit('first'), 'the first of the batch');
    await stream.next(isEmit('second'), 'the second of the batch');
  });

  it('cuts data to 1 KB of UTF-8, ending with …', async () => {
    const stream = await open();
    await emit({ rooms: ['big'], event: 'big', data: { text: 'é'.repeat(5000) } });
    const entry = await stream.next(isEmit('big'), 'the big emit');
    expect(entry.data?.endsWith('…')).toBe(true);
    expect(Buffer.byteLength(entry.data ?? '')).toBeLessThanOrEqual(1024);
    expect(entry.data?.startsWith('{"text":"éé')).toBe(true);
  });

  it('shows webhook tries with their status and batch', async () => {
    const stream = await open();
    const test = await send(server, { method: 'POST', path: `${API}/webhooks/test` });
    expect(test.json.delivered, test.text).toBe(true);
    const tried = await stream.next((e) => e.kind === 'webhook', 'the webhook try');
    expect(tried.status).toBe(test.json.status);
    expect(tried.error).toBeUndefined();
    const data = JSON.parse(tried.data ?? '') as Record<string, unknown>;
    expect(data).toMatchObject({ batch: expect.stringMatching(/^b_/), events: 1, try: 1, state: 'taken' });
  });

  it('shows joins, sends (sealed ones as they are), presence and leaves of pages, and refused frames', async () => {
    const stream = await open();
    const ann = await page('ann');
    await stream.next((e) => e.kind === 'presence' && e.event === 'user.online' && e.user === 'ann', 'ann online');
    expect((await join(ann, 'chat', { presence: true, send: ['*'] })).t).toBe('joined');
    await stream.next((e) => e.kind === 'join' && e.room === 'chat' && e.user === 'ann', 'the join');
    const joined = await stream.next((e) => e.kind === 'presence' && e.event === 'member.joined', 'member.joined');
    expect(joined).toMatchObject({ room: 'chat', user: 'ann' });
    expect(JSON.parse(joined.data ?? '')).toEqual({ user: 'ann' });

    ann.send({ t: 'send', ref: ++refs, room: 'chat', event: 'say', data: { text: 'hi' } });
    expect(await stream.next((e) => e.kind === 'send', 'the send')).toEqual({
      at: expect.any(Number),
      kind: 'send',
      room: 'chat',
      user: 'ann',
      event: 'say',
      data: '{"text":"hi"}',
    });

    // A sealed room: the console shows the sealed value, never opened.
    expect((await join(ann, 'vault', { sealed: true, send: ['*'] })).t).toBe('joined');
    const sealed = sealWithKey(sealingKey(randomBytes(32), 'room:vault'), 'room:vault', '{"secret":1}');
    ann.send({ t: 'send', ref: ++refs, room: 'vault', event: 'locked', data: sealed });
    expect((await stream.next((e) => e.kind === 'send' && e.room === 'vault', 'the sealed send')).data).toBe(
      JSON.stringify(sealed),
    );
    // Refused: not allowed by the token, and a join with a token for another room.
    ann.send({ t: 'send', ref: ++refs, room: 'vault', event: 'open', data: { secret: 1 } });
    expect(await stream.next((e) => e.kind === 'send' && e.error !== undefined, 'the refused send')).toMatchObject({
      room: 'vault',
      user: 'ann',
      event: 'open',
      error: 'not_sealed',
    });
    const ref = ++refs;
    ann.send({ t: 'join', ref, room: 'other', token: await sdk.roomToken('chat') });
    expect(await stream.next((e) => e.kind === 'join' && e.error !== undefined, 'the refused join')).toMatchObject({
      room: 'other',
      user: 'ann',
      error: 'wrong_room',
    });

    const leaveRef = ++refs;
    ann.send({ t: 'leave', ref: leaveRef, room: 'chat' });
    await stream.next((e) => e.kind === 'leave' && e.room === 'chat' && e.user === 'ann', 'the leave');
    await stream.next((e) => e.kind === 'presence' && e.event === 'member.left' && e.room === 'chat', 'member.left');
    // A page that closes leaves its rooms.
    await ann.close();
    await stream.next((e) => e.kind === 'leave' && e.room === 'vault', 'the leave of a closing page');
    // A page without a user: its entries have none.
    const visitor = await page();
    await join(visitor, 'chat');
    expect(await stream.next((e) => e.kind === 'join' && e.room === 'chat', 'the visitor join')).toEqual({
      at: expect.any(Number),
      kind: 'join',
      room: 'chat',
    });
  });

  it('shows asks and their replies, declines and asks nobody can answer', async () => {
    const stream = await open();
    const bob = await page('bob');
    bob.ws.on('message', (raw) => {
      const frame = JSON.parse(raw.toString()) as { t: string; ask?: string; event?: string };
      if (frame.t !== 'ask') return;
      if (frame.event === 'confirm') bob.send({ t: 'reply', ask: frame.ask, data: { yes: true } });
      else bob.send({ t: 'decline', ask: frame.ask });
    });
    const asked = await post(server, `${API}/users/bob/ask`, { event: 'confirm', data: { order: 7 }, timeout: 5000 });
    expect(asked.json.replies).toEqual([{ data: { yes: true }, at: expect.any(Number) }]);
    // The reply may reach the console before the ask's own entry (the ask is tapped once it went out).
    await stream.until(() => stream.entries.some((e) => e.kind === 'reply'), 'the reply');
    expect(stream.entries.find((e) => e.kind === 'ask')).toEqual({
      at: expect.any(Number),
      kind: 'ask',
      user: 'bob',
      event: 'confirm',
      data: '{"order":7}',
    });
    expect(stream.entries.find((e) => e.kind === 'reply')).toEqual({
      at: expect.any(Number),
      kind: 'reply',
      user: 'bob',
      event: 'confirm',
      data: '{"yes":true}',
    });
    await post(server, `${API}/users/bob/ask`, { event: 'other', timeout: 5000 });
    await stream.until(() => stream.entries.some((e) => e.kind === 'ask' && e.event === 'other'), 'the second ask');
    expect(await stream.next((e) => e.kind === 'reply' && e.event === 'other', 'the decline')).toMatchObject({
      user: 'bob',
      event: 'other',
      error: 'declined',
    });
    await post(server, `${API}/users/nobody/ask`, { event: 'ping' });
    expect(await stream.next((e) => e.kind === 'ask' && e.user === 'nobody', 'the unanswerable ask')).toMatchObject({
      event: 'ping',
      error: 'offline',
    });
  });

  it('filters by room, user and event, exactly', async () => {
    const byRoom = await open('?room=a');
    const byUser = await open('?user=fil');
    const byEvent = await open('?event=pick&room=');
    const all = await open();
    await emit({ rooms: ['b', 'A', 'a '], event: 'skip', data: 0 });
    await emit({ users: ['fila', 'Fil'], event: 'skip', data: 0 });
    await emit({ rooms: ['a'], users: ['fil'], event: 'pick', data: 1 });
    await all.next((e) => e.event === 'pick' && e.user === 'fil', 'everything in the unfiltered console');
    // Other traffic of the app (webhook tries, presence of earlier pages) may come too: emits are these.
    expect(all.entries.filter((e) => e.kind === 'emit')).toHaveLength(7);
    await byRoom.next((e) => e.event === 'pick', 'room a');
    await byUser.next((e) => e.event === 'pick', 'user fil');
    await byEvent.until(() => byEvent.entries.length === 2, 'both picks');
    expect(byRoom.entries.map((e) => [e.room, e.event])).toEqual([['a', 'pick']]);
    expect(byUser.entries.map((e) => [e.user, e.event])).toEqual([['fil', 'pick']]);
    expect(byEvent.entries.map((e) => e.event)).toEqual(['pick', 'pick']);
    // Entries without the field filtered on never pass: a webhook try has no room.
    await send(server, { method: 'POST', path: `${API}/webhooks/test` });
    await all.next((e) => e.kind === 'webhook', 'the try');
    await emit({ rooms: ['a'], event: 'pick', data: 2 });
    await byRoom.next((e) => e.event === 'pick', 'the second pick');
    expect(byRoom.entries.filter((e) => e.kind === 'webhook')).toEqual([]);
  });

  it('refuses what is not a console: signed out, no app, bad filters', async () => {
    const cases: [string | undefined, string, string, number, string][] = [
      [undefined, app.key, '', 401, 'signed_out'],
      ['forged', app.key, '', 401, 'signed_out'],
      [cookie, 'no-such-app', '', 404, 'no_app'],
      [cookie, app.key, '?rooms=a', 400, 'bad_request'],
      [cookie, app.key, '?room=a&room=b', 400, 'bad_request'],
      [cookie, app.key, `?room=${'r'.repeat(LIMITS.roomNameBytes + 1)}`, 400, 'bad_request'],
      [cookie, app.key, '?event=%E0%A4%A', 400, 'bad_request'],
    ];
    for (const [who, key, query, status, code] of cases) {
      const answer = await openConsole(server, key, who, query);
      expect([answer.status, JSON.parse(answer.text).error], `${key}${query}`).toEqual([status, code]);
    }
    expect(server.watchedByConsole(app.key)).toBe(false);
  });

  it('streams at most 20 consoles per node: the next is refused 429 busy until one closes', async () => {
    for (let i = 0; i < 20; i++) await open(`?event=e${i}`);
    const refused = await openConsole(server, app.key, cookie);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toEqual({ ok: false, error: 'busy', message: expect.any(String) });
    expect(refused.headers['retry-after']).toBe('5');
    consoles[0]?.close();
    await waitFor(async () => {
      const again = await openConsole(server, app.key, cookie);
      if (again.status === 200) consoles.push(again);
      return again.status === 200;
    }, 'a console again once one closed');
  });

  it('drops entries for a reader that does not read, and says how many once it reads again', async () => {
    const stream = await open('?room=flood');
    stream.res.pause();
    // About 1 KB per entry, past what the sockets between the two can hold (a few MB on loopback).
    const text = 'x'.repeat(900);
    const batches = 120;
    for (let b = 0; b < batches; b++) {
      const events = Array.from({ length: LIMITS.eventsPerBatch }, (_, i) => ({
        rooms: ['flood'],
        event: 'f',
        data: { n: b * LIMITS.eventsPerBatch + i, text },
      }));
      expect((await post(server, `${API}/emit/batch`, { events })).status).toBe(200);
    }
    const sent = batches * LIMITS.eventsPerBatch;
    stream.res.resume();
    const dropped = () => stream.entries.reduce((sum, e) => sum + (e.kind === 'dropped' ? (e.count ?? 0) : 0), 0);
    const shown = () => stream.entries.filter((e) => e.kind === 'emit').length;
    await stream.until(() => dropped() > 0 && shown() + dropped() === sent, 'every entry shown or counted', 30_000);
    expect(dropped()).toBeGreaterThan(0);
    // What was shown came in order; the stream goes on after the gap.
    const ns = stream.entries
      .filter((e) => e.kind === 'emit')
      .map((e) => (JSON.parse(e.data ?? '') as { n: number }).n);
    expect(ns).toEqual([...ns].sort((a, b) => a - b));
    await emit({ rooms: ['flood'], event: 'after', data: 0 });
    await stream.next((e) => e.event === 'after', 'an entry after the drop');
  }, 60_000);

  it('ends the watch when the stream closes', async () => {
    const first = await open();
    const second = await open('?room=x');
    first.close();
    // Another console of the app is open: still watched.
    await waitFor(() => server.watchedByConsole(app.key) === true, 'the second console to hold the watch');
    await emit({ rooms: ['x'], event: 'still', data: 1 });
    await second.next(isEmit('still'), 'an entry for the console left');
    second.close();
    await waitFor(() => !server.watchedByConsole(app.key), 'no console: the app is not watched');
  });
});

/** A broker of one process over the memory fan-out, that can stop publishing (its node died). */
function memoryBroker(fanout: MemoryFanout): Broker & { dead: boolean } {
  const broker = {
    dead: false,
    publish(events: Parameters<Broker['publish']>[0]) {
      if (!broker.dead) for (const event of events) fanout.publish(event);
      return events.map(() => undefined);
    },
    subscribe: (topic: string, handler: Parameters<Broker['subscribe']>[1]) => fanout.subscribe(topic, handler),
    close() {},
  };
  return broker;
}

describe('the console tap across nodes', () => {
  const log = createLogger('silent');

  it('stops tapping an app once its watch was not said again for the TTL (a console node died)', async () => {
    const clock = manualClock();
    // Only the sweep's interval is faked: the test runs it when it wants, at the clock it set.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const fanout = new MemoryFanout();
    const viaA = memoryBroker(fanout);
    const a = new ConsoleTap({ node: 'a', broker: viaA, log, now: clock.now, announceMs: 50, ttlMs: 200 });
    const b = new ConsoleTap({ node: 'b', broker: memoryBroker(fanout), log, now: clock.now, ttlMs: 200 });
    await a.start();
    await b.start();
    try {
      expect(b.watching('app1')).toBe(false);
      const seen: string[] = [];
      await a.open('app1', { filter: { room: 'r' }, deliver: (_e, json) => seen.push(json), end: () => {} });
      expect(b.watching('app1')).toBe(true);
      expect(b.watching('app2')).toBe(false);
      // b's entries that pass a's filter go to a.
      b.record('app1', { kind: 'emit', room: 'other', event: 'e', data: '0' });
      b.record('app1', { kind: 'emit', room: 'r', event: 'e', data: '1' });
      await waitFor(() => seen.length === 1, "the entry for a's console");
      expect(JSON.parse(seen[0] ?? '')).toEqual({ at: clock.now(), kind: 'emit', room: 'r', event: 'e', data: '1' });
      // a dies: it says nothing more. Within the TTL b still taps; past it, not.
      viaA.dead = true;
      clock.advance(150);
      vi.advanceTimersByTime(120); // two sweeps within the TTL
      expect(b.watching('app1')).toBe(true);
      clock.advance(100);
      vi.advanceTimersByTime(50); // the next sweep, past it
      expect(b.watching('app1')).toBe(false);
    } finally {
      await a.close();
      await b.close();
      vi.useRealTimers();
    }
  });

  it("ends a deleted app's consoles on every node, saying why, and leaves other apps' consoles open", async () => {
    const clock = manualClock();
    const fanout = new MemoryFanout();
    const a = new ConsoleTap({ node: 'a', broker: memoryBroker(fanout), log, now: clock.now });
    const b = new ConsoleTap({ node: 'b', broker: memoryBroker(fanout), log, now: clock.now });
    await a.start();
    await b.start();
    const ended: string[] = [];
    const sink = (name: string) => ({
      filter: {},
      deliver: () => {},
      end: (reason: string) => ended.push(`${name} ${reason}`),
    });
    try {
      await a.open('app1', sink('a/app1'));
      await b.open('app1', sink('b/app1'));
      await b.open('app2', sink('b/app2'));
      expect([a.consoles, b.consoles]).toEqual([1, 2]);

      await a.endApp('app1');

      await waitFor(() => ended.length === 2, 'both consoles of app1 to end');
      expect(ended.sort()).toEqual(['a/app1 app_deleted', 'b/app1 app_deleted']);
      expect([a.consoles, b.consoles]).toEqual([0, 1]);
      // No node taps the deleted app any more; the other app is still watched.
      await waitFor(() => !a.watching('app1') && !b.watching('app1'), 'app1 to be watched nowhere');
      expect(a.watching('app2')).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
    // The service stopping ends what is left, saying so.
    expect(ended).toContain('b/app2 stopping');
  });
});
