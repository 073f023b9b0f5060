import { Realtime } from '@realtime/node';
import { CLOSE } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skewedClock } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, openRawPage, type RawPage } from './pages.js';

const OUTBOX = 256 * 1024;

describe('page gateway: hardening', () => {
  const clock = skewedClock();
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const page = async (user?: string) => {
    const p = await helloPage(server.url, server.app.key, user ? await sdk.identityToken(user) : undefined);
    pages.push(p);
    return p;
  };

  beforeAll(async () => {
    server = await startTestServer({ gateway: { outboxBytes: OUTBOX }, now: clock.now });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('closes with 4200 a page that stops reading during a replay, however many live events wait', async () => {
    // 30 MB kept: far more than the kernel's socket buffers on loopback take, so the replay must wait.
    const big = 'x'.repeat(100_000);
    for (let i = 0; i < 300; i++)
      await sdk.emit({ rooms: ['replay'], event: 'k', data: big, history: { replay: [1000, 1] } });
    const slow = await page();
    const other = await page();
    other.send({ t: 'join', ref: 1, room: 'replay', token: await sdk.roomToken('replay') });
    await other.next((f) => f.t === 'joined');
    slow.ws.pause();
    slow.send({ t: 'join', ref: 1, room: 'replay', token: await sdk.roomToken('replay'), since: '0-0' });
    // The replay waits for a reader that never reads; live events must not pile up behind it.
    for (let i = 0; i < 30; i++) await sdk.emit({ rooms: ['replay'], event: 'live', data: big });
    slow.ws.resume();
    expect((await slow.closed).code).toBe(CLOSE.slowConsumer);
    // Closed while the replay still waited (the live events held behind it went over the bound): the
    // page got part of the replay and none of the live events.
    expect(slow.frames.filter((f) => f.event === 'k').length).toBeLessThan(300);
    expect(slow.frames.filter((f) => f.event === 'live')).toHaveLength(0);
    await sdk.emit({ rooms: ['replay'], event: 'after', data: 1 });
    await other.next(isEvent('after', 'replay'));
  });

  it('closes with 4002 a page whose identity makes a long error, instead of leaving it open', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'HS256', crit: ['é'.repeat(200)] })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ sub: 'x', exp: 9_999_999_999 })).toString('base64url');
    const p = await openRawPage(server.url, server.app.key);
    pages.push(p);
    p.send({ t: 'hello', v: 1, identity: `${header}.${payload}.${'A'.repeat(43)}` });
    const closed = await p.closed;
    expect(closed.code).toBe(CLOSE.badIdentity);
    expect(Buffer.byteLength(closed.reason)).toBeLessThanOrEqual(123);
  });

  it('counts a reply nested too deep as a decline: the ask still answers, with the other replies', async () => {
    const a = await page('deep');
    const b = await page('deep');
    const asked = sdk.ask('deep', { event: 'q', all: true, timeout: 1500 });
    const qa = await a.next((f) => f.t === 'ask');
    const qb = await b.next((f) => f.t === 'ask');
    a.sendText(`{"t":"reply","ask":"${qa.ask}","data":${'['.repeat(300_000)}${']'.repeat(300_000)}}`);
    b.send({ t: 'reply', ask: qb.ask, data: 'fine' });
    expect(await a.next((f) => f.t === 'error')).toMatchObject({ code: 'bad_frame' });
    const replies = await asked;
    expect(replies.map((r) => r.data)).toEqual(['fine']);
  });

  it('applies a rotated secret to open pages: a room token under the old secret stops working', async () => {
    const p = await page('rotating');
    const oldToken = await sdk.roomToken('secret-room');
    // Rotated in the store, as the CLI does (from another process, on any engine).
    expect(await server.apps.setSecret(server.app.key, 'a-brand-new-secret-000000')).toBe(true);
    // The service caches apps for a second: its clock moves past that.
    clock.advance(1200);
    p.send({ t: 'join', ref: 7, room: 'secret-room', token: oldToken });
    expect(await p.next((f) => f.ref === 7)).toMatchObject({ t: 'error', code: 'bad_token' });
    const fresh = new Realtime({ url: server.url, key: server.app.key, secret: 'a-brand-new-secret-000000' });
    p.send({ t: 'join', ref: 8, room: 'secret-room', token: await fresh.roomToken('secret-room') });
    expect(await p.next((f) => f.ref === 8)).toMatchObject({ t: 'joined' });
    await fresh.close();
  });
});

describe('page sends of data nested too deep', () => {
  it('answer bad_frame with the ref, and the page goes on', async () => {
    const server = await startTestServer();
    const sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    const p = await helloPage(server.url, server.app.key);
    p.send({ t: 'join', ref: 1, room: 'deep', token: await sdk.roomToken('deep', { send: ['*'] }) });
    await p.next((f) => f.t === 'joined');
    p.sendText(`{"t":"send","ref":2,"room":"deep","event":"e","data":${'['.repeat(300_000)}${']'.repeat(300_000)}}`);
    expect(await p.next((f) => f.ref === 2)).toMatchObject({
      t: 'error',
      code: 'bad_frame',
      message: 'data is nested too deeply',
    });
    p.send({ t: 'send', ref: 3, room: 'deep', event: 'e', data: 1 });
    expect(await p.next((f) => f.ref === 3)).toMatchObject({ t: 'sent' });
    await p.close();
    await sdk.close();
    await server.close();
  });
});
