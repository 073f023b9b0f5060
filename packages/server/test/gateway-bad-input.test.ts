import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { Realtime } from '@realtime/node';
import { CLOSE, MAX_FRAME_BYTES, roomLabel, SOCKET_PATH } from '@realtime/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  answerPings,
  type Frame,
  nowSeconds,
  signToken,
  skewedClock,
  tamperedToken,
  unsignedToken,
  waitFor,
} from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, openRawPage, type RawPage } from './pages.js';

/** A server with one healthy page in a room: after each bad thing done to another page, it must still get events. */
async function withHealthyPage(options: Parameters<typeof startTestServer>[0] = {}) {
  const server = await startTestServer(options);
  const sdk = new Realtime({
    url: server.url,
    key: server.app.key,
    secret: server.app.secret,
    localKey: randomBytes(32),
  });
  const healthy = await helloPage(server.url, server.app.key, await sdk.identityToken('healthy'));
  answerPings(healthy);
  healthy.send({ t: 'join', ref: 1, room: 'healthy', token: await sdk.roomToken('healthy') });
  await healthy.next((f) => f.t === 'joined', 'healthy joined');
  let checks = 0;
  return {
    server,
    sdk,
    healthy,
    /** The healthy page still gets an emit, and the service still answers it. */
    async expectHealthy() {
      const n = ++checks;
      await sdk.emit({ rooms: ['healthy'], event: 'check', data: n });
      await healthy.next((f) => isEvent('check', 'healthy')(f) && f.data === n, `health check ${n}`);
      await expectAlive(healthy);
    },
    async close() {
      await healthy.close();
      await sdk.close();
      await server.close();
    },
  };
}

/** The page answers a ping: it is still open and its frames are still taken. */
async function expectAlive(p: RawPage): Promise<void> {
  p.send({ t: 'ping' });
  await p.next((f) => f.t === 'pong', 'pong');
}

/** Sends a raw text frame and expects an error frame with the code (and ref when given), the page staying open. */
async function expectRefused(p: RawPage, frame: string | Frame, code: string, ref?: number): Promise<Frame> {
  if (typeof frame === 'string') p.sendText(frame);
  else p.send(frame);
  const error = await p.next((f) => f.t === 'error', `error ${code} for ${JSON.stringify(frame).slice(0, 80)}`);
  expect(error).toMatchObject({ code });
  expect(typeof error.message).toBe('string');
  if (ref === undefined) expect(error).not.toHaveProperty('ref');
  else expect(error.ref).toBe(ref);
  await expectAlive(p);
  return error;
}

describe('page gateway: bad input', () => {
  let env: Awaited<ReturnType<typeof withHealthyPage>>;
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const page = async (user?: string) => {
    const identity = user === undefined ? undefined : await sdk.identityToken(user);
    const p = await helloPage(server.url, server.app.key, identity);
    pages.push(p);
    return p;
  };
  /** Opens a socket and sends one first frame; resolves with how the service closed it (or with welcome). */
  const firstFrame = async (send: (p: RawPage) => void) => {
    const p = await openRawPage(server.url, server.app.key);
    pages.push(p);
    send(p);
    return Promise.race([
      p.closed,
      p.next((f) => f.t === 'welcome' || f.t === 'error', 'welcome').then((f) => ({ code: 0, reason: '', frame: f })),
    ]);
  };
  const hello = (identity?: unknown) => (p: RawPage) => p.send({ t: 'hello', v: 1, identity });
  let ref = 100;
  const join = async (p: RawPage, room: string, token: string) => {
    const r = ++ref;
    p.send({ t: 'join', ref: r, room, token });
    const answer = await p.next((f) => f.ref === r && (f.t === 'joined' || f.t === 'error'), `answer to join ${r}`);
    return { r, answer };
  };

  beforeAll(async () => {
    env = await withHealthyPage();
    server = env.server;
    sdk = env.sdk;
  });
  afterEach(async () => {
    await env.expectHealthy();
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await env.close();
  });

  describe('garbage frames on an open page: bad_frame, and the page goes on', () => {
    it.each([
      ['not JSON', 'not json'],
      ['cut-off JSON', '{"t":"ping"'],
      ['an empty text frame', ''],
      ['a JSON array', '[]'],
      ['a JSON array holding a frame', '[{"t":"ping"}]'],
      ['a JSON string', '"ping"'],
      ['a JSON number', '42'],
      ['JSON null', 'null'],
      ['JSON true', 'true'],
      ['an object without t', '{}'],
      ['a t that is not a string', '{"t":5}'],
      ['an unknown t', '{"t":"subscribe","room":"x"}'],
      ['t of an Object.prototype name', '{"t":"constructor"}'],
      ['t __proto__', '{"t":"__proto__"}'],
      ['t hasOwnProperty', '{"t":"hasOwnProperty"}'],
      ['a __proto__ field', '{"t":"ping","__proto__":{"t":"hello"}}'],
      ['deeply nested arrays', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
      ['control characters and lone surrogates', '\u0000\u0001\ud800'],
    ])('%s', async (_what, text) => {
      const p = await page('garbage');
      await expectRefused(p, text, 'bad_frame');
    });

    it('missing, mistyped and unknown fields: bad_frame with the ref when the ref was good', async () => {
      const p = await page('fields');
      const cases: [Frame, number | undefined][] = [
        [{ t: 'join', ref: 11, room: 'r' }, 11],
        [{ t: 'join', ref: 12, room: 'r', token: 5 }, 12],
        [{ t: 'join', ref: 13, room: 5, token: 'x' }, 13],
        [{ t: 'join', ref: 14, room: 'r', token: 'x', since: 'yesterday' }, 14],
        [{ t: 'join', ref: 15, room: 'r', token: 'x', since: 5 }, 15],
        [{ t: 'join', ref: 16, room: 'r', token: 'x', last: 0 }, 16],
        [{ t: 'join', ref: 17, room: 'r', token: 'x', last: 1001 }, 17],
        [{ t: 'join', ref: 18, room: 'r', token: 'x', last: 1.5 }, 18],
        [{ t: 'join', ref: 19, room: 'r', token: 'x', last: '5' }, 19],
        [{ t: 'join', ref: 20, room: 'r', token: 'x', since: '1-0', last: 5 }, 20],
        [{ t: 'join', ref: 21, room: 'r', token: 'x', extra: true }, 21],
        [{ t: 'send', ref: 22, room: 'r' }, 22],
        [{ t: 'send', ref: 23, room: 'r', event: ['x'] }, 23],
        [{ t: 'leave', ref: 24 }, 24],
        [{ t: 'leave', ref: 25, room: 'r', token: 'x' }, 25],
        [{ t: 'ping', ref: 26 }, 26],
        [{ t: 'join', ref: '1', room: 'r', token: 'x' }, undefined],
        [{ t: 'join', ref: 1.5, room: 'r', token: 'x' }, undefined],
        [{ t: 'join', ref: 2 ** 60, room: 'r', token: 'x' }, undefined],
        [{ t: 'join', ref: null, room: 'r', token: 'x' }, undefined],
        [{ t: 'reply' }, undefined],
        [{ t: 'reply', ask: 5 }, undefined],
        [{ t: 'decline', ask: ['a'] }, undefined],
        [{ t: 'hello', v: '1' }, undefined],
        [{ t: 'hello', v: 1 }, undefined],
      ];
      for (const [frame, r] of cases) await expectRefused(p, frame, 'bad_frame', r);
      // Valid frames about nothing known are dropped without an answer.
      p.send({ t: 'reply', ask: 'no-such-ask', data: 1 });
      p.send({ t: 'decline', ask: 'no-such-ask' });
      p.send({ t: 'pong' });
      await expectAlive(p);
      expect(p.frames.filter((f) => f.t === 'error')).toHaveLength(cases.length);
    });

    it('room names that are not accepted: bad_room with ref and room', async () => {
      const p = await page('rooms');
      for (const room of ['', '$service', 'a\u0001b', 'x'.repeat(201)]) {
        const error = await expectRefused(p, { t: 'join', ref: 30, room, token: 'x' }, 'bad_room', 30);
        expect(error.room).toBe(room);
      }
    });

    it('a binary frame: bad_frame, and the page goes on', async () => {
      const p = await page('binary');
      p.ws.send(Buffer.from('{"t":"ping"}'), { binary: true });
      expect(await p.next((f) => f.t === 'error')).toMatchObject({ code: 'bad_frame' });
      await expectAlive(p);
    });

    it('a text frame that is not UTF-8: closed with 1007', async () => {
      const p = await page('utf8');
      p.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
      expect((await p.closed).code).toBe(1007);
    });
  });

  describe('the handshake', () => {
    it.each([
      ['a ping', (p: RawPage) => p.send({ t: 'ping' })],
      ['a join', (p: RawPage) => p.send({ t: 'join', ref: 1, room: 'r', token: 'x' })],
      ['not JSON', (p: RawPage) => p.sendText('hello')],
      ['a JSON array', (p: RawPage) => p.sendText('[{"t":"hello","v":1}]')],
      ['a hello without v', (p: RawPage) => p.send({ t: 'hello' })],
      ['a hello with v as a string', (p: RawPage) => p.send({ t: 'hello', v: '1' })],
      ['a hello with an unknown field', (p: RawPage) => p.send({ t: 'hello', v: 1, user: 'admin' })],
      ['a hello with identity not a string', (p: RawPage) => p.send({ t: 'hello', v: 1, identity: 5 })],
      ['a binary hello', (p: RawPage) => p.ws.send(Buffer.from('{"t":"hello","v":1}'), { binary: true })],
    ])('a first frame that is not a valid hello (%s): closed with 4003', async (_what, send) => {
      const result = await firstFrame(send);
      expect(result.code).toBe(CLOSE.badHello);
    });

    it.each([2, 0, 1.5])('hello with v %s: closed with 4000', async (v) => {
      expect((await firstFrame((p) => p.send({ t: 'hello', v }))).code).toBe(CLOSE.unsupportedVersion);
    });

    it('identities that are not valid: closed with 4002', async () => {
      const now = nowSeconds();
      const secret = server.app.secret;
      const claims = { sub: 'mallory', exp: now + 600 };
      const cases: [string, string][] = [
        ["another app's secret", await signToken(claims, { secret: 'another-secret' })],
        ['alg none', unsignedToken(claims)],
        ['alg none with a real signature', `${unsignedToken(claims)}${(await sdk.identityToken('x')).split('.')[2]}`],
        ['a tampered payload', tamperedToken(await sdk.identityToken('alice'), (c) => (c.sub = 'admin'))],
        ['tampered info', tamperedToken(await sdk.identityToken('alice', { info: { a: 1 } }), (c) => (c.info = {}))],
        ['HS512 under the right key', await signToken(claims, { secret, alg: 'HS512' })],
        ['HS256 under the raw secret', await signToken(claims, { key: Buffer.from(secret) })],
        ['expired beyond the 5 min leeway', await signToken({ sub: 'm', exp: now - 400 }, { secret })],
        ['exp more than 24 h ahead', await signToken({ sub: 'm', exp: now + 2 * 86_400 }, { secret })],
        ['no exp', await signToken({ sub: 'm' }, { secret })],
        ['exp not a number', await signToken({ sub: 'm', exp: String(now + 60) }, { secret })],
        ['not yet valid (nbf in an hour)', await signToken({ ...claims, nbf: now + 3600 }, { secret })],
        ['no sub', await signToken({ exp: now + 600 }, { secret })],
        ['sub not a string', await signToken({ sub: 5, exp: now + 600 }, { secret })],
        ['sub starting with $', await signToken({ sub: '$admin', exp: now + 600 }, { secret })],
        ['info not an object', await signToken({ ...claims, info: 'x' }, { secret })],
        ['info over 1 KB', await signToken({ ...claims, info: { x: 'y'.repeat(1100) } }, { secret })],
        ['a room token without sub', await sdk.roomToken('lobby')],
        ['not a JWT', 'garbage'],
        ['an empty string', ''],
        ['over 8 KB', `${await sdk.identityToken('alice')}${'A'.repeat(9000)}`],
      ];
      for (const [what, token] of cases) {
        const result = await firstFrame(hello(token));
        expect(result.code, what).toBe(CLOSE.badIdentity);
      }
    });

    it('an identity expired within the 5 min leeway is taken, and unknown claims are ignored', async () => {
      const now = nowSeconds();
      const secret = server.app.secret;
      const late = await firstFrame(hello(await signToken({ sub: 'late', exp: now - 60 }, { secret })));
      expect(late).toMatchObject({ frame: { t: 'welcome', user: 'late' } });
      const extra = await signToken({ sub: 'extra', exp: now + 60, iss: 'me', aud: 'x', foo: [1] }, { secret });
      expect(await firstFrame(hello(extra))).toMatchObject({ frame: { t: 'welcome', user: 'extra' } });
    });

    it('an upgrade at another path gets HTTP 404', async () => {
      const { hostname, port } = new URL(server.url);
      for (const path of ['/', '/socket', '/service/realtime/socket/x', '/service/realtime/sockets?site=x']) {
        const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpRequest({
            host: hostname,
            port,
            path,
            headers: {
              Connection: 'Upgrade',
              Upgrade: 'websocket',
              'Sec-WebSocket-Key': randomBytes(16).toString('base64'),
              'Sec-WebSocket-Version': '13',
            },
          });
          req.on('response', (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          });
          req.on('upgrade', () => reject(new Error(`upgraded at ${path}`)));
          req.on('error', reject);
          req.end();
        });
        expect(answer.status, path).toBe(404);
        expect(JSON.parse(answer.body)).toMatchObject({ ok: false, error: 'not_found' });
      }
      // The ws client sees the same.
      const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/elsewhere?site=${server.app.key}`);
      const error = await new Promise<Error>((resolve) => ws.on('error', resolve));
      expect(error.message).toMatch(/404/);
      expect(SOCKET_PATH).toBe('/service/realtime/socket');
    });
  });

  describe('room tokens', () => {
    it('wrong secret, expired, other room, other user, too far ahead, bad claims: each its code, and the page goes on', async () => {
      const p = await page('alice');
      const now = nowSeconds();
      const secret = server.app.secret;
      const room = 'guarded';
      const cases: [string, string, string][] = [
        ['bad_token', 'a token under another secret', await signToken({ room, exp: now + 60 }, { secret: 'nope' })],
        ['bad_token', 'alg none', unsignedToken({ room, exp: now + 60 })],
        ['bad_token', 'HS512', await signToken({ room, exp: now + 60 }, { secret, alg: 'HS512' })],
        ['bad_token', 'tampered', tamperedToken(await sdk.roomToken('elsewhere'), (c) => (c.room = room))],
        ['bad_token', 'tampered rules', tamperedToken(await sdk.roomToken(room), (c) => (c.send = ['*']))],
        ['token_expired', 'expired beyond the leeway', await signToken({ room, exp: now - 400 }, { secret })],
        ['wrong_room', 'for another room', await sdk.roomToken('another-room')],
        ['wrong_user', 'for another user', await sdk.roomToken(room, { userId: 'bob' })],
        ['bad_token', 'exp over 24 h ahead', await signToken({ room, exp: now + 2 * 86_400 }, { secret })],
        ['bad_token', 'no exp', await signToken({ room }, { secret })],
        ['bad_token', 'no room', await signToken({ exp: now + 60 }, { secret })],
        ['bad_token', 'room not a string', await signToken({ room: 5, exp: now + 60 }, { secret })],
        ['bad_token', 'send not an array', await signToken({ room, send: 'x', exp: now + 60 }, { secret })],
        ['bad_token', 'send with a number', await signToken({ room, send: [5], exp: now + 60 }, { secret })],
        ['bad_token', 'w an object', await signToken({ room, w: {}, exp: now + 60 }, { secret })],
        ['bad_token', 'presence a string', await signToken({ room, presence: 'yes', exp: now + 60 }, { secret })],
        ['bad_token', 'sealed a number', await signToken({ room, sealed: 1, exp: now + 60 }, { secret })],
        ['bad_token', 'history limit 0', await signToken({ room, history: [0, 1], exp: now + 60 }, { secret })],
        ['bad_token', 'history 200 h', await signToken({ room, history: [10, 200], exp: now + 60 }, { secret })],
        ['bad_token', 'history not a pair', await signToken({ room, history: [10], exp: now + 60 }, { secret })],
        ['bad_token', 'sub not a string', await signToken({ room, sub: 7, exp: now + 60 }, { secret })],
        ['bad_token', 'an identity token', await sdk.identityToken('alice')],
        ['bad_token', 'not a JWT', 'not.a.jwt'],
        ['bad_token', 'over 8 KB', 'x'.repeat(8193)],
      ];
      for (const [code, what, token] of cases) {
        const { r, answer } = await join(p, room, token);
        expect(answer, what).toMatchObject({ t: 'error', code, ref: r, room });
        await expectAlive(p);
      }
      expect(p.frames.some((f) => f.t === 'joined')).toBe(false);

      // Expired within the leeway still opens the room; then a good token does too.
      expect((await join(p, room, await signToken({ room, exp: now - 60 }, { secret }))).answer.t).toBe('joined');
      expect((await join(p, room, await sdk.roomToken(room, { userId: 'alice' }))).answer.t).toBe('joined');

      // A token issued to a user does not open the room for an anonymous page.
      const anon = await page();
      const anonJoin = await join(anon, room, await sdk.roomToken(room, { userId: 'alice' }));
      expect(anonJoin.answer).toMatchObject({ t: 'error', code: 'wrong_user' });
      await expectAlive(anon);
    });
  });

  describe('page sends', () => {
    it('not_allowed, not_joined and reserved events are refused; the page goes on', async () => {
      const p = await page('sender');
      await join(p, 'chat', await sdk.roomToken('chat', { send: ['msg'] }));
      await join(p, 'quiet', await sdk.roomToken('quiet'));
      await join(p, 'anything', await sdk.roomToken('anything', { send: ['*', '$own'] }));
      await expectRefused(p, { t: 'send', ref: 40, room: 'chat', event: 'other', data: 1 }, 'not_allowed', 40);
      await expectRefused(p, { t: 'send', ref: 41, room: 'quiet', event: 'msg', data: 1 }, 'not_allowed', 41);
      await expectRefused(p, { t: 'send', ref: 42, room: 'nowhere', event: 'msg' }, 'not_joined', 42);
      await expectRefused(p, { t: 'leave', ref: 43, room: 'nowhere' }, 'not_joined', 43);
      for (const event of ['$member.joined', '$member.left', '$own']) {
        await expectRefused(p, { t: 'send', ref: 44, room: 'anything', event, data: {} }, 'reserved', 44);
      }
      for (const event of ['', 'a\u0000b', 'e'.repeat(101)]) {
        await expectRefused(p, { t: 'send', ref: 45, room: 'anything', event }, 'bad_frame', 45);
      }
      // Leaving, then sending: not joined any more.
      p.send({ t: 'leave', ref: 46, room: 'chat' });
      expect(await p.next((f) => f.ref === 46)).toMatchObject({ t: 'left', room: 'chat' });
      await expectRefused(p, { t: 'send', ref: 47, room: 'chat', event: 'msg' }, 'not_joined', 47);
      // And a good send still goes through.
      p.send({ t: 'send', ref: 48, room: 'anything', event: 'fine', data: 1 });
      expect(await p.next((f) => f.ref === 48)).toMatchObject({ t: 'sent' });
    });

    it('a sealed room refuses unsealed data (not_sealed) and carries sealed data', async () => {
      const room = 'vault';
      const sender = await page('sealer');
      const reader = await page('reader');
      await join(sender, room, await sdk.roomToken(room, { send: ['*'], sealed: true }));
      await join(reader, room, await sdk.roomToken(room, { sealed: true }));
      const unsealed: unknown[] = [
        { text: 'hi' },
        'plain text',
        5,
        null,
        'room:vault:1.short',
        `room:vault:1.${'*'.repeat(60)}`,
      ];
      for (const data of unsealed) {
        await expectRefused(sender, { t: 'send', ref: 50, room, event: 'secret', data }, 'not_sealed', 50);
      }
      await expectRefused(sender, { t: 'send', ref: 51, room, event: 'secret' }, 'not_sealed', 51);

      const sealed = sdk.seal(roomLabel(room), { pin: 1234 });
      sender.send({ t: 'send', ref: 52, room, event: 'secret', data: sealed });
      const sent = await sender.next((f) => f.ref === 52);
      expect(sent).toMatchObject({ t: 'sent' });
      const got = await reader.next(isEvent('secret', room));
      expect(got).toMatchObject({ id: sent.id, from: 'sealer', data: sealed });
      expect(sdk.open(got.data, roomLabel(room))).toEqual({ pin: 1234 });
      // The service only checks the shape: a value sealed under another label passes too.
      sender.send({ t: 'send', ref: 53, room, event: 'secret', data: sdk.seal(roomLabel('other'), 1) });
      expect(await sender.next((f) => f.ref === 53)).toMatchObject({ t: 'sent' });
    });

    it('data over 1 MB: too_large; exactly 1 MB is taken; a frame over the maximum closes with 1009', async () => {
      const p = await page('big');
      const reader = await page('big-reader');
      await join(p, 'big', await sdk.roomToken('big', { send: ['*'] }));
      await join(reader, 'big', await sdk.roomToken('big'));
      // JSON text of the data: the string plus its two quotes.
      const over = 'x'.repeat(1_048_576 - 1);
      await expectRefused(p, { t: 'send', ref: 60, room: 'big', event: 'e', data: over }, 'too_large', 60);
      const exact = 'x'.repeat(1_048_576 - 2);
      p.send({ t: 'send', ref: 61, room: 'big', event: 'e', data: exact });
      expect(await p.next((f) => f.ref === 61)).toMatchObject({ t: 'sent' });
      expect(((await reader.next(isEvent('e', 'big'))).data as string).length).toBe(exact.length);

      // A frame of exactly the maximum size is read (and its data refused); one byte more closes the socket.
      const frameOf = (size: number) => {
        const head = '{"t":"send","ref":62,"room":"big","event":"e","data":"';
        return `${head}${'y'.repeat(size - head.length - 2)}"}`;
      };
      expect(Buffer.byteLength(frameOf(MAX_FRAME_BYTES))).toBe(MAX_FRAME_BYTES);
      await expectRefused(p, frameOf(MAX_FRAME_BYTES), 'too_large', 62);
      p.sendText(frameOf(MAX_FRAME_BYTES + 1));
      expect((await p.closed).code).toBe(1009);
      expect(reader.ws.readyState).toBe(WebSocket.OPEN);
    });
  });
});

describe('page gateway: timers and budgets', () => {
  it('no hello in time: closed with 4102; a page that said hello stays', async () => {
    const env = await withHealthyPage({ gateway: { helloTimeoutMs: 200 } });
    try {
      const silent = await openRawPage(env.server.url, env.server.app.key);
      const greeted = await helloPage(env.server.url, env.server.app.key);
      expect((await silent.closed).code).toBe(CLOSE.helloTimeout);
      expect(silent.frames).toEqual([]);
      await expectAlive(greeted);
      await env.expectHealthy();
      await greeted.close();
    } finally {
      await env.close();
    }
  });

  it('flooding: rate_limited errors, then closed with 4201; a page a little over its budget stays', async () => {
    const clock = skewedClock();
    const env = await withHealthyPage({ gateway: { framesPerSecond: 10, frameBurst: 20 }, now: clock.now });
    try {
      const flood = await helloPage(env.server.url, env.server.app.key);
      for (let i = 0; i < 200; i++) flood.send({ t: 'ping' });
      expect((await flood.closed).code).toBe(CLOSE.tooFast);
      const pongs = flood.frames.filter((f) => f.t === 'pong').length;
      const limited = flood.frames.filter((f) => f.t === 'error' && f.code === 'rate_limited');
      expect(pongs).toBeGreaterThanOrEqual(19); // the burst (hello took one)
      expect(pongs).toBeLessThan(40);
      expect(limited.length).toBeGreaterThan(0);
      expect(limited.length).toBeLessThan(40);
      await env.expectHealthy();

      // A little over: errors, but not closed; once the budget refills, frames are taken again.
      const eager = await helloPage(env.server.url, env.server.app.key);
      for (let i = 0; i < 25; i++) eager.send({ t: 'ping' });
      await eager.next((f) => f.t === 'error' && f.code === 'rate_limited', 'rate_limited');
      await waitFor(() => eager.frames.filter((f) => f.t === 'pong' || f.t === 'error').length === 25, '25 answers');
      // A second later on the service's clock, 10 frames came back: the next ping is taken.
      clock.advance(1000);
      const answered = eager.frames.length;
      eager.send({ t: 'ping' });
      await waitFor(() => eager.frames.length > answered, 'the answer a second later');
      expect(eager.frames[answered]).toEqual({ t: 'pong' });
      expect(eager.ws.readyState).toBe(WebSocket.OPEN);
      await env.expectHealthy();
      await eager.close();
    } finally {
      await env.close();
    }
  });

  it('heartbeat: a page that sends nothing after welcome is closed with 4101; one that answers pings stays', async () => {
    const env = await withHealthyPage({ gateway: { heartbeatMs: 100, silenceMs: 300 } });
    try {
      const silent = await helloPage(env.server.url, env.server.app.key);
      expect(silent.frames[0]).toMatchObject({ t: 'welcome', heartbeat: 100 });
      const alive = await helloPage(env.server.url, env.server.app.key);
      answerPings(alive);
      expect((await silent.closed).code).toBe(CLOSE.heartbeatTimeout);
      // The service pinged it before giving up.
      expect(silent.frames.some((f) => f.t === 'ping')).toBe(true);
      await expectAlive(alive);
      expect(alive.frames.filter((f) => f.t === 'ping').length).toBeGreaterThan(0);
      await env.expectHealthy();
      await alive.close();
    } finally {
      await env.close();
    }
  });
});
