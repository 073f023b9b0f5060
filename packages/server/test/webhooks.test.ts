import { Realtime } from '@realtime/node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../src/index.js';
import { skewedClock } from './gateway-tools.js';
import { API, send, startTestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { startReceiver } from './receiver.js';

const DELAYS = [400, 800, 1600];

async function setup(timings: Record<string, unknown> = {}, offlineDelayMs = 400, now?: () => number) {
  const app = newApp({ name: 'hooks' });
  const receiver = await startReceiver(app);
  const server = await startTestServer({
    app: { ...app, webhook: receiver.url },
    allowPrivateWebhooks: true,
    offlineDelayMs,
    webhooks: { windowMs: 150, retryDelaysMs: DELAYS, answerMs: 400, ...timings },
    gateway: { framesPerSecond: 2000, frameBurst: 2000 },
    ...(now ? { now } : {}),
  });
  const sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
  return { app, receiver, server, sdk };
}

describe('webhook events: every type, with its fields', () => {
  let env: Awaited<ReturnType<typeof setup>>;
  const pages: RawPage[] = [];
  beforeAll(async () => {
    env = await setup();
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await env.sdk.close();
    await env.server.close();
    await env.receiver.close();
  });

  const open = async (user: string) => {
    const p = await helloPage(env.server.url, env.app.key, await env.sdk.identityToken(user));
    pages.push(p);
    return p;
  };
  let ref = 0;
  const join = async (p: RawPage, room: string, rules: Parameters<Realtime['roomToken']>[1]) => {
    const r = ++ref;
    p.send({ t: 'join', ref: r, room, token: await env.sdk.roomToken(room, rules) });
    return p.next((f) => f.ref === r, 'joined');
  };

  it('sends user.online, room.occupied, member.joined, emit, member.left, room.vacated, user.offline', async () => {
    const { receiver } = env;
    const alice = await open('alice');
    await join(alice, 'lobby', { userId: 'alice', send: ['chat', 'quiet'], w: ['chat'], presence: true });
    alice.send({ t: 'send', ref: 50, room: 'lobby', event: 'chat', data: { text: 'hi' } });
    alice.send({ t: 'send', ref: 51, room: 'lobby', event: 'quiet', data: 1 });
    const sent = await alice.next((f) => f.t === 'sent' && f.ref === 50);
    await alice.next((f) => f.ref === 51);
    await receiver.waitFor(() => receiver.events('emit').length === 1, 'the emit event');
    const [emit] = receiver.events('emit');
    expect(emit).toMatchObject({ type: 'emit', room: 'lobby', event: 'chat', data: { text: 'hi' }, from: 'alice' });
    expect(emit?.event_id).toBe(sent.id);
    expect(receiver.events().some((e) => e.type === 'emit' && e.event === 'quiet')).toBe(false);

    await alice.close();
    await receiver.waitFor(() => receiver.events('user.offline').length === 1, 'user.offline');
    const types = receiver.events().map((e) => e.type);
    expect(types).toEqual([
      'user.online',
      'room.occupied',
      'member.joined',
      'emit',
      'member.left',
      'room.vacated',
      'user.offline',
    ]);
    for (const event of receiver.events()) {
      expect(typeof event.id).toBe('string');
      expect(Number.isInteger(event.at)).toBe(true);
    }
    expect(receiver.events('member.joined')[0]).toMatchObject({ room: 'lobby', user: 'alice' });
    expect(receiver.events('room.vacated')[0]).toMatchObject({ room: 'lobby' });
    expect(receiver.events('user.offline')[0]).toMatchObject({ user: 'alice' });
    const online = receiver.events('user.online')[0]?.at as number;
    const offline = receiver.events('user.offline')[0]?.at as number;
    expect(offline - online).toBeGreaterThanOrEqual(400);
    expect(new Set(receiver.events().map((e) => e.id)).size).toBe(receiver.events().length);
  });

  it('reports member events per user, not per tab, and no offline when a page is back in time', async () => {
    const { receiver } = env;
    const before = receiver.events().length;
    const t1 = await open('bob');
    const t2 = await open('bob');
    await join(t1, 'room2', { userId: 'bob', presence: true });
    await join(t2, 'room2', { userId: 'bob', presence: true });
    await t1.close();
    await t2.close();
    // Back within the offline delay: no user.offline, no second user.online.
    const t3 = await open('bob');
    const mark = await open('marker-user');
    await join(mark, 'marker', { userId: 'marker-user' });
    await receiver.waitFor(
      () => receiver.events('room.occupied').some((e) => e.room === 'marker'),
      'the marker room to be occupied',
    );
    // Past the offline delay with t3 still open: still no user.offline. The marker user's offline
    // falls due after bob's would have, so bob's would have been reported before it.
    await mark.close();
    await receiver.waitFor(
      () => receiver.events('user.offline').some((e) => e.user === 'marker-user'),
      "the marker user's user.offline",
    );
    await env.sdk.webhooks.test();
    expect(await env.sdk.online(['bob'])).toEqual(['bob']);
    await t3.close();
    const mine = receiver
      .events()
      .slice(before)
      .filter((e) => e.user === 'bob' || e.room === 'room2');
    expect(mine.filter((e) => e.type === 'user.online')).toHaveLength(1);
    expect(mine.filter((e) => e.type === 'user.offline')).toHaveLength(0);
    expect(mine.filter((e) => e.type === 'member.joined')).toHaveLength(1);
    expect(mine.filter((e) => e.type === 'member.left')).toHaveLength(1);
  });

  it('sends webhook.test and answers delivered with the status', async () => {
    const before = env.receiver.events('webhook.test').length;
    const answer = await env.sdk.webhooks.test();
    expect(answer).toEqual({ delivered: true, status: 204 });
    expect(env.receiver.events('webhook.test')).toHaveLength(before + 1);
  });
});

describe('webhook batching', () => {
  let env: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => {
    // A window longer than 250 page sends take on any engine (each is a round trip to Redis there).
    env = await setup({ windowMs: 3000 });
  });
  afterAll(async () => {
    await env.sdk.close();
    await env.server.close();
    await env.receiver.close();
  });

  it('sends 250 events of one second as 3 batches of at most 100, in order', async () => {
    const page = await helloPage(env.server.url, env.app.key, await env.sdk.identityToken('producer'));
    page.send({ t: 'join', ref: 1, room: 'burst', token: await env.sdk.roomToken('burst', { send: ['n'], w: ['n'] }) });
    await page.next((f) => f.t === 'joined');
    const before = env.receiver.batches.length;
    for (let i = 0; i < 250; i++) page.send({ t: 'send', ref: 100 + i, room: 'burst', event: 'n', data: i });
    const acks = [];
    for (let i = 0; i < 250; i++) acks.push(await page.next((f) => f.t === 'sent' && f.ref === 100 + i));
    const ids = acks.map((a) => a.id);
    await env.receiver.waitFor(() => env.receiver.events('emit').length >= 250, '250 emit events');
    const batches = env.receiver.batches.slice(before).filter((b) => b.events.some((e) => e.type === 'emit'));
    expect(batches).toHaveLength(3);
    for (const batch of batches) expect(batch.events.length).toBeLessThanOrEqual(100);
    const received = batches.flatMap((b) => b.events).filter((e) => e.type === 'emit');
    expect(received.map((e) => e.event_id)).toEqual(ids);
    expect(received.map((e) => e.data)).toEqual(Array.from({ length: 250 }, (_, i) => i));
    await page.close();
  });
});

describe('webhook failures, retries, listing and resend', () => {
  const clock = skewedClock();
  let env: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => {
    env = await setup({ resendWindowMs: 1500 }, 400, clock.now);
  });
  afterAll(async () => {
    await env.sdk.close();
    await env.server.close();
    await env.receiver.close();
  });
  afterEach(() => {
    env.receiver.mode = 'ok';
  });

  const latest = async () => (await env.sdk.webhooks.list())[0];

  it('climbs the failure ladder: 500, then a timeout, then unreachable, each on schedule; resend sends the same ids', async () => {
    const { receiver, sdk } = env;
    receiver.mode = 'fail';
    const first = await sdk.webhooks.test();
    expect(first).toEqual({ delivered: false, status: 500 });
    const record = await latest();
    expect(record).toMatchObject({ state: 'retrying', status: 500, events: 1, attempts: 1, resendable: true });
    expect(record?.error).toBeUndefined();
    expect((record?.next_at ?? 0) - (record?.at ?? 0)).toBe(DELAYS[0]);

    receiver.mode = 'hang';
    await receiver.waitFor(() => receiver.requests >= 2, 'the second try');
    const second = await waitForRecord((r) => r.attempts === 2);
    expect(second).toMatchObject({ state: 'retrying', status: 0, error: 'timeout' });
    expect((second.next_at ?? 0) - (second.at ?? 0)).toBe(DELAYS[1]);

    receiver.mode = 'drop';
    const third = await waitForRecord((r) => r.attempts === 3);
    expect(third).toMatchObject({ state: 'retrying', status: 0, error: 'unreachable' });
    expect((third.next_at ?? 0) - (third.at ?? 0)).toBe(DELAYS[2]);

    receiver.mode = 'ok';
    const again = await sdk.webhooks.resend(third.id);
    expect(again).toEqual({ delivered: true, status: 204 });
    const taken = await waitForRecord((r) => r.state === 'taken');
    expect(taken).toMatchObject({ status: 204, next_at: null, resendable: false, attempts: 4 });
    const tests = receiver.events('webhook.test');
    expect(tests).toHaveLength(1);
    expect(receiver.batches.at(-1)?.id).toBe(third.id);

    await expect(sdk.webhooks.resend(third.id)).rejects.toMatchObject({ code: 'not_resendable', status: 409 });
    await expect(sdk.webhooks.resend('b_nope')).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('gives up after the last scheduled try, stays resendable in its window, then not', async () => {
    const { receiver, sdk } = env;
    receiver.mode = 'fail';
    await sdk.webhooks.test();
    const givenUp = await waitForRecord((r) => r.state === 'given_up', 8000);
    expect(givenUp).toMatchObject({ attempts: DELAYS.length + 1, next_at: null, resendable: true, status: 500 });
    // A failed resend leaves it given up.
    expect(await sdk.webhooks.resend(givenUp.id)).toEqual({ delivered: false, status: 500 });
    expect(await latest()).toMatchObject({ state: 'given_up', resendable: true });
    clock.advance(1600); // past the resend window
    expect(await latest()).toMatchObject({ state: 'given_up', resendable: false });
    await expect(sdk.webhooks.resend(givenUp.id)).rejects.toMatchObject({ code: 'not_resendable' });
  });

  it('answers no_webhook without an address and lists newest first', async () => {
    const list = await env.sdk.webhooks.list();
    expect(list.length).toBeGreaterThanOrEqual(2);
    expect(list[0]?.id).not.toBe(list[1]?.id);
    const noHook = await startTestServer();
    const answer = await send(noHook, { method: 'POST', path: `${API}/webhooks/test` });
    expect([answer.status, answer.json.error]).toEqual([409, 'no_webhook']);
    await noHook.close();
  });

  async function waitForRecord(test: (r: NonNullable<Awaited<ReturnType<typeof latest>>>) => boolean, ms = 6000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const record = await latest();
      if (record && test(record)) return record;
      if (Date.now() > deadline) throw new Error(`no such record; last: ${JSON.stringify(record)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
});
