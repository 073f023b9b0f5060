import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deriveKey, sign } from '@realtime/protocol';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookDeduplicator } from './webhook-dedupe.js';
import {
  createWebhookReceiver,
  expressWebhook,
  fastifyWebhook,
  type WebhookContext,
  type WebhookHandlerOptions,
  webhookHandler,
} from './webhook-handlers.js';
import type { WebhookEvent } from './webhook-verify.js';

const KEY = 'app1';
const SECRET = 'webhook-test-secret-0123456789';
const WEBHOOK_KEY = deriveKey(SECRET, 'webhook');

function event(id: string): WebhookEvent {
  return { id, at: 1_700_000_000_000, type: 'user.online', user: `u-${id}` };
}

/** A batch as the service sends it: body, and the headers signed for `path` with a fresh timestamp. */
function signedBatch(path: string, events: WebhookEvent[], batch = 'b_1', secretKey = WEBHOOK_KEY) {
  const body = JSON.stringify({ events });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-service-site': KEY,
    'x-service-timestamp': timestamp,
    'x-service-signature': sign({ key: secretKey, timestamp, method: 'POST', path, body }),
    'x-service-batch': batch,
  };
  return { body, headers };
}

interface Delivery {
  events: WebhookEvent[];
  context: WebhookContext;
}

/** Records what onEvents got; `fail` makes the next calls throw. */
function recorder() {
  const deliveries: Delivery[] = [];
  const errors: unknown[] = [];
  const state = { fail: false };
  const options: Pick<WebhookHandlerOptions, 'key' | 'secret' | 'onEvents' | 'onError'> = {
    key: KEY,
    secret: SECRET,
    onEvents: async (events, context) => {
      await new Promise((resolve) => setImmediate(resolve));
      if (state.fail) throw new Error('onEvents failed on purpose');
      deliveries.push({ events, context });
    },
    onError: (error) => errors.push(error),
  };
  return { deliveries, errors, state, options, ids: () => deliveries.flatMap((d) => d.events.map((e) => e.id)) };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((close) => close()));
});

async function listen(listener: RequestListener): Promise<string> {
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function listenFastify(app: FastifyInstance): Promise<string> {
  cleanups.push(() => app.close());
  return app.listen({ port: 0, host: '127.0.0.1' });
}

async function post(base: string, path: string, batch: { body: string; headers: Record<string, string> }) {
  const response = await fetch(base + path, { method: 'POST', body: batch.body, headers: batch.headers });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** The behaviour every handler shares, run against a real server of each kind. */
function sharedBehaviour(start: (options: WebhookHandlerOptions) => Promise<{ base: string; path: string }>) {
  it('answers 204 and delivers the events once, in order, with the batch id', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    const events = [event('a1'), event('a2'), event('a3')];
    expect(await post(base, path, signedBatch(path, events, 'b_42'))).toEqual({ status: 204, body: undefined });
    expect(r.deliveries).toEqual([{ events, context: { batch: 'b_42' } }]);
  });

  it('a repeated batch (retry or resend) is answered 204 without delivering its events again', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    const events = [event('r1'), event('r2')];
    expect((await post(base, path, signedBatch(path, events))).status).toBe(204);
    // The service signs every try afresh: same body and ids, new timestamp and signature.
    expect((await post(base, path, signedBatch(path, events))).status).toBe(204);
    expect((await post(base, path, signedBatch(path, [event('r2'), event('r3'), event('r1')]))).status).toBe(204);
    expect(r.ids()).toEqual(['r1', 'r2', 'r3']);
    expect(r.deliveries).toHaveLength(2);
  });

  it('answers 401 with the error code on a failed check, delivering nothing', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    const wrongSecret = signedBatch(path, [event('x1')], 'b_1', deriveKey('another-secret-123456', 'webhook'));
    expect(await post(base, path, wrongSecret)).toEqual({ status: 401, body: { ok: false, error: 'bad_signature' } });
    const tampered = signedBatch(path, [event('x1')]);
    tampered.body = tampered.body.replace('x1', 'x2');
    expect(await post(base, path, tampered)).toEqual({ status: 401, body: { ok: false, error: 'bad_signature' } });
    const unsigned = signedBatch(path, [event('x1')]);
    delete unsigned.headers['x-service-signature'];
    expect(await post(base, path, unsigned)).toEqual({ status: 401, body: { ok: false, error: 'missing_signature' } });
    const stale = signedBatch(path, [event('x1')]);
    const old = String(Math.floor(Date.now() / 1000) - 3600);
    stale.headers['x-service-timestamp'] = old;
    stale.headers['x-service-signature'] = sign({
      key: WEBHOOK_KEY,
      timestamp: old,
      method: 'POST',
      path,
      body: stale.body,
    });
    expect(await post(base, path, stale)).toEqual({ status: 401, body: { ok: false, error: 'stale_signature' } });
    expect(r.deliveries).toEqual([]);
    // The refused tries recorded nothing: the genuine batch is still new.
    expect((await post(base, path, signedBatch(path, [event('x1')]))).status).toBe(204);
    expect(r.ids()).toEqual(['x1']);
  });

  it('answers 500 when onEvents throws, and delivers the events on the next try', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    const events = [event('f1'), event('f2')];
    r.state.fail = true;
    expect(await post(base, path, signedBatch(path, events))).toEqual({
      status: 500,
      body: { ok: false, error: 'handler_failed' },
    });
    expect(r.errors).toHaveLength(1);
    expect(String(r.errors[0])).toMatch(/failed on purpose/);
    r.state.fail = false;
    expect((await post(base, path, signedBatch(path, events))).status).toBe(204);
    expect(r.ids()).toEqual(['f1', 'f2']);
  });
}

describe('webhookHandler (node:http)', () => {
  const start = async (options: WebhookHandlerOptions) => {
    const handler = webhookHandler(options);
    const base = await listen((req, res) => {
      if (req.url?.startsWith('/hooks/realtime')) return handler(req, res);
      res.writeHead(404).end();
    });
    return { base, path: '/hooks/realtime?x=1' };
  };

  sharedBehaviour(start);

  it('answers 405 to anything but POST', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    const response = await fetch(base + path);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    expect(await response.json()).toEqual({ ok: false, error: 'bad_method' });
  });

  it('answers 413 to a body over maxBodyBytes, declared or streamed', async () => {
    const r = recorder();
    const { base, path } = await start({ ...r.options, maxBodyBytes: 1000 });
    const big = signedBatch(
      path,
      Array.from({ length: 40 }, (_, i) => event(`big-${i}`)),
    );
    expect(big.body.length).toBeGreaterThan(1000);
    expect(await post(base, path, big)).toEqual({ status: 413, body: { ok: false, error: 'too_large' } });
    // Without a content-length (chunked), the limit holds while reading.
    const chunked = await fetch(base + path, {
      method: 'POST',
      headers: big.headers,
      body: new Blob([big.body]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    const small = signedBatch(path, [event('s1')]);
    expect((await post(base, path, small)).status).toBe(204);
    expect(r.ids()).toEqual(['s1']);
  });

  it('answers 400 bad_body to a genuine signature over a body that is not a batch', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const body = '{"events":"nope"}';
    const headers = {
      'x-service-site': KEY,
      'x-service-timestamp': timestamp,
      'x-service-signature': sign({ key: WEBHOOK_KEY, timestamp, method: 'POST', path, body }),
    };
    expect(await post(base, path, { body, headers })).toEqual({ status: 400, body: { ok: false, error: 'bad_body' } });
    expect(r.deliveries).toEqual([]);
  });

  it('checks against signedPath when a proxy changed the path', async () => {
    const r = recorder();
    const handler = webhookHandler({ ...r.options, signedPath: '/public/hooks?app=1' });
    const base = await listen(handler);
    // Signed for the public address, received at another path.
    expect((await post(base, '/internal', signedBatch('/public/hooks?app=1', [event('p1')]))).status).toBe(204);
    expect((await post(base, '/internal', signedBatch('/internal', [event('p2')]))).status).toBe(401);
    expect(r.ids()).toEqual(['p1']);
  });

  it('uses a custom asynchronous de-duplicator, and answers 500 when it fails', async () => {
    const store = new Set<string>();
    const state = { down: false };
    const dedupe: WebhookDeduplicator = {
      async seen(id) {
        await new Promise((resolve) => setImmediate(resolve));
        if (state.down) throw new Error('store down');
        if (store.has(id)) return true;
        store.add(id);
        return false;
      },
      async forget(id) {
        store.delete(id);
      },
    };
    const r = recorder();
    const { base, path } = await start({ ...r.options, dedupe });
    expect((await post(base, path, signedBatch(path, [event('c1')]))).status).toBe(204);
    expect((await post(base, path, signedBatch(path, [event('c1')]))).status).toBe(204);
    expect([...store]).toEqual(['c1']);
    state.down = true;
    expect((await post(base, path, signedBatch(path, [event('c2')]))).status).toBe(500);
    expect(String(r.errors[0])).toMatch(/store down/);
    state.down = false;
    expect((await post(base, path, signedBatch(path, [event('c2')]))).status).toBe(204);
    expect(r.ids()).toEqual(['c1', 'c2']);
  });

  it('a copy that arrives while the first is being handled answers like the first', async () => {
    let release: (ok: boolean) => void = () => {};
    const gate = new Promise<boolean>((resolve) => {
      release = resolve;
    });
    let firstCall: () => void = () => {};
    const called = new Promise<void>((resolve) => {
      firstCall = resolve;
    });
    const delivered: string[] = [];
    let calls = 0;
    const seenCalls: string[] = [];
    const memory = new Set<string>();
    const dedupe: WebhookDeduplicator = {
      seen(id) {
        seenCalls.push(id);
        const repeat = memory.has(id);
        memory.add(id);
        // The copy reached the de-duplicator: let the first one fail once the copy has had a turn.
        if (repeat && calls === 1) setImmediate(() => release(false));
        return repeat;
      },
      forget(id) {
        memory.delete(id);
      },
    };
    const { base, path } = await start({
      key: KEY,
      secret: SECRET,
      dedupe,
      onError: () => {},
      onEvents: async (events) => {
        calls++;
        firstCall();
        if (calls === 1 && !(await gate)) throw new Error('first try fails');
        delivered.push(...events.map((e) => e.id));
      },
    });
    const events = [event('k1')];
    const first = post(base, path, signedBatch(path, events));
    await called;
    const copy = post(base, path, signedBatch(path, events));
    const [a, b] = await Promise.all([first, copy]);
    expect(a.status).toBe(500);
    expect(b.status).toBe(500); // not 204: the first copy did not take the events
    expect(seenCalls).toEqual(['k1', 'k1']);
    expect(delivered).toEqual([]);
    expect((await post(base, path, signedBatch(path, events))).status).toBe(204);
    expect(delivered).toEqual(['k1']);
  });

  it('does not call onEvents for a batch with no events, and still answers 204', async () => {
    const r = recorder();
    const { base, path } = await start(r.options);
    expect((await post(base, path, signedBatch(path, []))).status).toBe(204);
    expect(r.deliveries).toEqual([]);
  });
});

describe('expressWebhook (Express)', () => {
  const path = '/hooks/realtime?x=1';

  describe('behind express.raw()', () => {
    sharedBehaviour(async (options) => {
      const app = express();
      app.post('/hooks/realtime', express.raw({ type: 'application/json', limit: '4mb' }), expressWebhook(options));
      return { base: await listen(app), path };
    });
  });

  describe('with no body parser (reads the request itself), in a router mounted on a prefix', () => {
    sharedBehaviour(async (options) => {
      const app = express();
      const router = express.Router();
      router.post('/realtime', expressWebhook(options));
      app.use('/hooks', router);
      return { base: await listen(app), path };
    });
  });

  it('answers 500 no_raw_body, and says why, when express.json() parsed the body first', async () => {
    const r = recorder();
    const app = express();
    app.use(express.json());
    app.post('/hooks/realtime', expressWebhook(r.options));
    const base = await listen(app);
    expect(await post(base, path, signedBatch(path, [event('j1')]))).toEqual({
      status: 500,
      body: { ok: false, error: 'no_raw_body' },
    });
    expect(String(r.errors[0])).toMatch(/express\.raw/);
    expect(r.deliveries).toEqual([]);
  });
});

describe('fastifyWebhook (Fastify)', () => {
  describe('registered as a plugin', () => {
    sharedBehaviour(async (options) => {
      const app = Fastify();
      await app.register(fastifyWebhook({ ...options, path: '/hooks/realtime' }));
      return { base: await listenFastify(app), path: '/hooks/realtime?x=1' };
    });
  });

  describe('registered under a prefix', () => {
    sharedBehaviour(async (options) => {
      const app = Fastify();
      await app.register(fastifyWebhook({ ...options, path: '/realtime' }), { prefix: '/hooks' });
      return { base: await listenFastify(app), path: '/hooks/realtime?x=1' };
    });
  });

  it("keeps Fastify's JSON parser for the app's other routes", async () => {
    const r = recorder();
    const app = Fastify();
    await app.register(fastifyWebhook({ ...r.options, path: '/hooks/realtime' }));
    app.post('/echo', async (request) => ({ parsed: request.body }));
    const base = await listenFastify(app);
    const response = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(await response.json()).toEqual({ parsed: { a: 1 } });
    expect((await post(base, '/hooks/realtime', signedBatch('/hooks/realtime', [event('e1')]))).status).toBe(204);
    expect(r.ids()).toEqual(['e1']);
  });

  it('.handler works on a route of your own that keeps the raw body in request.rawBody', async () => {
    const r = recorder();
    const app = Fastify();
    app.addHook('preParsing', async (request, _reply, payload) => {
      const chunks: Buffer[] = [];
      for await (const chunk of payload) chunks.push(chunk as Buffer);
      const raw = Buffer.concat(chunks);
      (request as unknown as { rawBody: Buffer }).rawBody = raw;
      const { Readable } = await import('node:stream');
      return Readable.from([raw]);
    });
    app.post('/custom', fastifyWebhook(r.options).handler);
    const base = await listenFastify(app);
    expect((await post(base, '/custom?y=2', signedBatch('/custom?y=2', [event('h1')]))).status).toBe(204);
    expect((await post(base, '/custom?y=2', signedBatch('/custom?y=3', [event('h2')]))).status).toBe(401);
    expect(r.ids()).toEqual(['h1']);
  });

  it('.handler answers 500 no_raw_body on a route where Fastify parsed the JSON', async () => {
    const r = recorder();
    const errors: unknown[] = [];
    const app = Fastify();
    app.post('/parsed', fastifyWebhook({ ...r.options, onError: (error) => errors.push(error) }).handler);
    const base = await listenFastify(app);
    expect(await post(base, '/parsed', signedBatch('/parsed', [event('n1')]))).toEqual({
      status: 500,
      body: { ok: false, error: 'no_raw_body' },
    });
    expect(String(errors[0])).toMatch(/raw body/);
    expect(r.deliveries).toEqual([]);
  });
});

describe('createWebhookReceiver', () => {
  it('answers without any server, for Fetch-style frameworks', async () => {
    const r = recorder();
    const receiver = createWebhookReceiver(r.options);
    const path = '/api/webhook';
    const batch = signedBatch(path, [event('z1')]);
    const request = new Request(`https://example.com${path}`, {
      method: 'POST',
      body: batch.body,
      headers: batch.headers,
    });
    const url = new URL(request.url);
    const input = {
      rawBody: new Uint8Array(await request.arrayBuffer()),
      headers: request.headers,
      path: url.pathname + url.search,
    };
    expect(await receiver.receive(input)).toEqual({ status: 204 });
    expect(await receiver.receive(input)).toEqual({ status: 204 });
    expect(await receiver.receive({ ...input, path: '/other' })).toEqual({
      status: 401,
      body: { ok: false, error: 'bad_signature' },
    });
    expect(r.ids()).toEqual(['z1']);
  });

  it('refuses bad options at once', () => {
    const onEvents = () => {};
    expect(() => createWebhookReceiver({ key: KEY, secret: '', onEvents })).toThrow(TypeError);
    expect(() => createWebhookReceiver({ key: KEY, secret: SECRET, onEvents: undefined as never })).toThrow(/onEvents/);
    expect(() =>
      createWebhookReceiver({ key: KEY, secret: SECRET, onEvents, dedupe: { seen: () => false } as never }),
    ).toThrow(/forget/);
    expect(() => webhookHandler({ key: KEY, secret: SECRET, onEvents, maxBodyBytes: 0 })).toThrow(TypeError);
    expect(() => webhookHandler({ key: KEY, secret: SECRET, onEvents, signedPath: 'hooks' })).toThrow(/signedPath/);
  });
});
