import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deriveKey, type EmitEvent, sha256Hex, sign } from '@realtime/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import vectors from '../../protocol/vectors/v1.json' with { type: 'json' };
import { Realtime } from './client.js';
import { RealtimeError } from './errors.js';
import { createTransport, type HttpMethod } from './request.js';

interface Captured {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

type Responder = (captured: Captured, res: ServerResponse) => void;

/** Answers like the service does for each endpoint, so the client's answer checks pass. */
const serviceLike: Responder = (captured, res) => {
  const path = captured.url.split('?')[0] ?? '';
  let answer: unknown = { ok: true };
  if (path.endsWith('/emit')) answer = { ok: true, ids: { lobby: '1700000000000-0' } };
  else if (path.endsWith('/emit/batch')) answer = { ok: true, ids: [{}] };
  else if (path.endsWith('/ask')) answer = { ok: true, replies: [{ data: 'pong', at: 1700000000001 }] };
  else if (path.endsWith('/online')) answer = { ok: true, online: ['a'] };
  else if (path.endsWith('/webhooks/test') || path.endsWith('/resend'))
    answer = { ok: true, delivered: true, status: 204 };
  else if (path.endsWith('/webhooks')) answer = { ok: true, deliveries: [] };
  json(res, 200, answer);
};

function json(res: ServerResponse, status: number, answer: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(answer));
}

let server: Server;
let baseUrl: string;
let captured: Captured[] = [];
let respond: Responder = serviceLike;
const clients: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      captured.push(entry);
      respond(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  captured = [];
  respond = serviceLike;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function client(options: Partial<ConstructorParameters<typeof Realtime>[0]> = {}): Realtime {
  const c = new Realtime({ url: baseUrl, key: 'app1', secret: 's3cret', ...options });
  clients.push(c);
  return c;
}

function only(): Captured {
  expect(captured).toHaveLength(1);
  return captured[0] as Captured;
}

/** Recomputes the signature of a captured request, as the service would. */
function expectValidSignature(request: Captured, secret = 's3cret'): void {
  const timestamp = String(request.headers['x-service-timestamp']);
  const expected = sign({
    key: deriveKey(secret, 'publish'),
    timestamp,
    method: request.method,
    path: request.url,
    body: request.body,
  });
  expect(request.headers['x-service-site']).toBe('app1');
  expect(request.headers['x-service-signature']).toBe(expected);
}

async function failure(promise: Promise<unknown>): Promise<RealtimeError> {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(RealtimeError);
  return error as RealtimeError;
}

describe('signed requests match the protocol vectors (section 5.2)', () => {
  for (const v of vectors.requests) {
    it(`${v.method} ${v.path} with secret ${JSON.stringify(v.secret.slice(0, 8))}`, async () => {
      const transport = createTransport({
        url: baseUrl,
        key: 'app1',
        secret: v.secret,
        now: () => Number(v.timestamp) * 1000,
      });
      clients.push(transport);
      await transport.signedRequest(v.method as HttpMethod, v.path, v.body);
      const request = only();
      expect(request.method).toBe(v.method);
      expect(request.url).toBe(v.path);
      expect(request.headers['x-service-site']).toBe('app1');
      expect(request.headers['x-service-timestamp']).toBe(v.timestamp);
      expect(request.headers['x-service-signature']).toBe(v.signature);
      // The bytes on the wire are the bytes that were hashed.
      expect(request.body.equals(Buffer.from(v.body, 'utf8'))).toBe(true);
      expect(sha256Hex(new Uint8Array(request.body))).toBe(v.body_sha256);
      expect(request.headers['content-type']).toBe(v.body === '' ? undefined : 'application/json');
    });
  }
});

describe('the client methods send the vector requests', () => {
  const bySecret = vectors.requests.filter((v) => v.secret !== '');
  const find = (secret: string, path: string) => {
    const v = bySecret.find((r) => r.secret === secret && r.path.startsWith(path));
    if (!v) throw new Error(`no vector for ${path}`);
    return v;
  };
  for (const secret of [...new Set(bySecret.map((v) => v.secret))]) {
    it(`emit, emitBatch, ask, online and webhooks.test with secret ${JSON.stringify(secret.slice(0, 8))}`, async () => {
      const calls: [string, (c: Realtime) => Promise<unknown>, unknown][] = [
        ['/service/realtime/emit/batch', (c) => c.emitBatch([{ users: ['u1'], event: 'e', data: null }]), [{}]],
        [
          '/service/realtime/emit',
          (c) => c.emit({ rooms: ['lobby'], event: 'hello', data: { text: 'hi' } }),
          { lobby: '1700000000000-0' },
        ],
        [
          '/service/realtime/users/',
          (c) => c.ask('alice b/c', { event: 'ping', data: 1, timeout: 2000 }),
          [{ data: 'pong', at: 1700000000001 }],
        ],
        ['/service/realtime/online', (c) => c.online(['a', 'b,c', 'é']), ['a']],
        ['/service/realtime/webhooks/test', (c) => c.webhooks.test(), { delivered: true, status: 204 }],
      ];
      for (const [path, call, result] of calls) {
        const v = find(secret, path);
        captured = [];
        const c = client({ secret, now: () => Number(v.timestamp) * 1000 });
        expect(await call(c)).toEqual(result);
        const request = only();
        expect(request.url).toBe(v.path);
        expect(request.body.toString('utf8')).toBe(v.body);
        expect(request.headers['x-service-signature']).toBe(v.signature);
      }
    });
  }
});

describe('paths and queries', () => {
  it('percent-encodes the user id of ask and signs the encoded path', async () => {
    await client().ask('a b/c?é', { event: 'ping', data: { n: 1 }, all: true, timeout: 100 });
    const request = only();
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/service/realtime/users/a%20b%2Fc%3F%C3%A9/ask');
    expect(JSON.parse(request.body.toString('utf8'))).toEqual({
      event: 'ping',
      data: { n: 1 },
      timeout: 100,
      all: true,
    });
    expectValidSignature(request);
  });

  it('encodes the dot segments `.` and `..` so no resolver can collapse them', async () => {
    const c = client();
    await c.ask('.', { event: 'ping' });
    await c.ask('..', { event: 'ping' });
    expect(captured.map((r) => r.url)).toEqual([
      '/service/realtime/users/%2E/ask',
      '/service/realtime/users/%2E%2E/ask',
    ]);
    for (const request of captured) expectValidSignature(request);
  });

  it('joins the encoded ids of online with commas and signs the query as sent', async () => {
    expect(await client().online(['a', 'b,c', "it's", 'x y', 'é'])).toEqual(['a']);
    const request = only();
    expect(request.method).toBe('GET');
    // `'` stays as encodeURIComponent leaves it: nothing re-encodes the path after signing.
    expect(request.url).toBe("/service/realtime/online?ids=a,b%2Cc,it's,x%20y,%C3%A9");
    expect(request.body.length).toBe(0);
    expect(request.headers['content-type']).toBeUndefined();
    expectValidSignature(request);
  });

  it('answers an empty online list without a request', async () => {
    expect(await client().online([])).toEqual([]);
    expect(captured).toHaveLength(0);
  });

  it('encodes the batch id of resend and sends no body', async () => {
    expect(await client().webhooks.resend('b/1 2')).toEqual({ delivered: true, status: 204 });
    const request = only();
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/service/realtime/webhooks/b%2F1%202/resend');
    expect(request.body.length).toBe(0);
    expect(request.headers['content-type']).toBeUndefined();
    expectValidSignature(request);
  });

  it('lists deliveries with a signed GET', async () => {
    const deliveries = [
      {
        id: 'b1',
        state: 'retrying',
        status: 0,
        error: 'timeout',
        events: 2,
        attempts: 1,
        at: 1,
        next_at: 2,
        resendable: true,
      },
    ];
    respond = (_req, res) => json(res, 200, { ok: true, deliveries });
    expect(await client().webhooks.list()).toEqual(deliveries);
    const request = only();
    expect([request.method, request.url]).toEqual(['GET', '/service/realtime/webhooks']);
    expectValidSignature(request);
  });

  it('keeps a path prefix of the base address and signs it', async () => {
    await client({ url: `${baseUrl}/behind/proxy/` }).emit({ users: ['u'], event: 'e' });
    const request = only();
    expect(request.url).toBe('/behind/proxy/service/realtime/emit');
    expectValidSignature(request);
  });

  it('uses the clock in seconds for the timestamp', async () => {
    await client({ now: () => 1_700_000_000_999 }).emit({ users: ['u'], event: 'e' });
    expect(only().headers['x-service-timestamp']).toBe('1700000000');
  });

  it('serializes the body once: the bytes sent are JSON.stringify of the event', async () => {
    const event: EmitEvent = {
      rooms: ['lobby', 'é ✓'],
      event: 'chat',
      data: { text: 'hé \u2028 "quoted"' },
      history: { lobby: [10, 1.5] },
    };
    await client().emit(event);
    const request = only();
    expect(request.body.toString('utf8')).toBe(JSON.stringify(event));
    expect(request.headers['content-type']).toBe('application/json');
    expectValidSignature(request);
  });
});

describe('error mapping', () => {
  it('turns ok:false into a RealtimeError with the code, status and message of the answer', async () => {
    respond = (_req, res) =>
      json(res, 413, { ok: false, error: 'too_many', message: 'more than 1,000 rooms and users' });
    const error = await failure(client().emit({ rooms: ['a'], event: 'e' }));
    expect(error.code).toBe('too_many');
    expect(error.status).toBe(413);
    expect(error.message).toBe('more than 1,000 rooms and users');
    expect(error.retryAfter).toBeUndefined();
    expect(error.name).toBe('RealtimeError');
  });

  it('falls back to the catalogue message when the answer has none', async () => {
    respond = (_req, res) => json(res, 401, { ok: false, error: 'bad_signature' });
    const error = await failure(client().emit({ rooms: ['a'], event: 'e' }));
    expect([error.code, error.status, error.message]).toEqual([
      'bad_signature',
      401,
      'The signature does not match the request.',
    ]);
  });

  it('reads Retry-After in seconds on 429', async () => {
    respond = (_req, res) =>
      json(res, 429, { ok: false, error: 'rate_limited', message: 'slow down' }, { 'retry-after': '3' });
    const error = await failure(client().online(['a']));
    expect(error.code).toBe('rate_limited');
    expect(error.status).toBe(429);
    expect(error.retryAfter).toBe(3);
  });

  it('reads Retry-After given as an HTTP date', async () => {
    const now = Date.parse('2024-01-01T00:00:00Z');
    respond = (_req, res) =>
      json(res, 429, { ok: false, error: 'rate_limited' }, { 'retry-after': 'Mon, 01 Jan 2024 00:00:07 GMT' });
    const error = await failure(client({ now: () => now }).online(['a']));
    expect(error.retryAfter).toBe(7);
  });

  it('gives bad_answer for a body that is not JSON', async () => {
    respond = (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>Bad Gateway</html>');
    };
    const error = await failure(client().emit({ rooms: ['a'], event: 'e' }));
    expect(error.code).toBe('bad_answer');
    expect(error.status).toBe(502);
  });

  it('gives bad_answer for JSON that is not an API answer', async () => {
    respond = (_req, res) => json(res, 200, [1, 2]);
    const error = await failure(client().emit({ rooms: ['a'], event: 'e' }));
    expect([error.code, error.status]).toEqual(['bad_answer', 200]);
  });

  it('gives bad_answer when a success answer lacks the expected field', async () => {
    respond = (_req, res) => json(res, 200, { ok: true, ids: 'nope' });
    const error = await failure(client().emit({ rooms: ['a'], event: 'e' }));
    expect(error.code).toBe('bad_answer');
    expect(error.message).toContain('ids');
  });

  it('gives network with status 0 when nothing listens on the port', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const error = await failure(client({ url: `http://127.0.0.1:${port}` }).emit({ rooms: ['a'], event: 'e' }));
    expect(error.code).toBe('network');
    expect(error.status).toBe(0);
    expect(error.cause).toBeDefined();
  });

  it('gives network when no answer comes within timeoutMs', async () => {
    respond = () => {
      // Never answers.
    };
    const error = await failure(client({ timeoutMs: 50 }).emit({ rooms: ['a'], event: 'e' }));
    expect(error.code).toBe('network');
    expect(error.status).toBe(0);
    expect(error.message).toContain('no answer within 50 ms');
  });

  it('gives network after close()', async () => {
    const c = client();
    await c.close();
    const error = await failure(c.emit({ rooms: ['a'], event: 'e' }));
    expect(error.code).toBe('network');
    expect(captured).toHaveLength(0);
  });
});

describe('options', () => {
  it('refuses a missing secret or key and an address that is not http(s)', () => {
    expect(() => new Realtime({ url: baseUrl, key: 'app1', secret: '' })).toThrow(TypeError);
    expect(() => new Realtime({ url: baseUrl, key: '', secret: 's' })).toThrow(TypeError);
    expect(() => new Realtime({ url: 'ftp://example.com', key: 'k', secret: 's' })).toThrow(/http/);
    expect(() => new Realtime({ url: 'not a url', key: 'k', secret: 's' })).toThrow(TypeError);
    expect(() => new Realtime({ url: baseUrl, key: 'k', secret: 's', timeoutMs: 0 })).toThrow(TypeError);
  });
});
