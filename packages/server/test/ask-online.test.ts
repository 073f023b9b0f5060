import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, post, send, startTestServer, type TestServer } from './helpers.js';

describe('POST /users/{id}/ask', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('answers at once with no replies when the user has no open page', async () => {
    const started = Date.now();
    const a = await post(server, `${API}/users/alice/ask`, { event: 'confirm', data: { n: 1 }, timeout: 30_000 });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ ok: true, replies: [] });
    // Not a timing assertion on speed: it must not have waited for the 30 s timeout.
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it('takes percent-encoded user ids and all: true', async () => {
    const a = await post(server, `${API}/users/a%20b%2Fc%C3%A9/ask`, { event: 'q', all: true, timeout: 1 });
    expect(a.json).toEqual({ ok: true, replies: [] });
  });

  it('answers bad_event for names kept for rooms', async () => {
    const a = await post(server, `${API}/users/alice/ask`, { event: '$member.joined' });
    expect([a.status, a.json.error]).toEqual([400, 'bad_event']);
  });

  for (const timeout of [0, -1, 30_001, 1.5, '1000', null, true]) {
    it(`answers bad_request for the timeout ${JSON.stringify(timeout)}`, async () => {
      const a = await post(server, `${API}/users/alice/ask`, { event: 'q', timeout });
      expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
      expect(a.json.message).toContain('timeout');
    });
  }

  it('accepts the timeout bounds 1 and 30000', async () => {
    for (const timeout of [1, 30_000]) {
      expect((await post(server, `${API}/users/alice/ask`, { event: 'q', timeout })).status).toBe(200);
    }
  });

  it('answers bad_request for other bad fields and bad user ids', async () => {
    const cases: [string, unknown][] = [
      ['/users/alice/ask', { event: 'q', all: 'yes' }],
      ['/users/alice/ask', { event: 'q', extra: 1 }],
      ['/users/alice/ask', { data: 1 }],
      ['/users/alice/ask', { event: '' }],
      ['/users/alice/ask', [1]],
      ['/users/%24root/ask', { event: 'q' }],
      ['/users/a%00b/ask', { event: 'q' }],
      ['/users/%E0%A4%A/ask', { event: 'q' }],
      ['/users/%ZZ/ask', { event: 'q' }],
      [`/users/${'u'.repeat(201)}/ask`, { event: 'q' }],
    ];
    for (const [path, body] of cases) {
      const a = await post(server, `${API}${path}`, body);
      expect([a.status, a.json.error], path).toEqual([400, 'bad_request']);
    }
  });

  it('answers too_large for data over 1 MB', async () => {
    const a = await send(server, {
      path: `${API}/users/alice/ask`,
      body: `{"event":"q","data":"${'z'.repeat(1_048_576)}"}`,
    });
    expect([a.status, a.json.error]).toEqual([413, 'too_large']);
  });
});

describe('GET /online', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('answers the online users among the ids (nobody has a page open)', async () => {
    const a = await send(server, { path: `${API}/online?ids=alice,bob,%C3%A9` });
    expect(a.status).toBe(200);
    expect(a.json).toEqual({ ok: true, online: [] });
  });

  it('answers bad_request when ids is missing, empty or malformed', async () => {
    for (const query of ['', '?ids=', '?ids', '?ids=a,,b', '?ids=%ZZ', '?ids=a&ids=b', '?other=1', '?ids=%24x']) {
      const a = await send(server, { path: `${API}/online${query}` });
      expect([a.status, a.json.error], query).toEqual([400, 'bad_request']);
    }
  });

  it('takes 1,000 ids and refuses 1,001 with too_many', async () => {
    const ids = Array.from({ length: 1000 }, (_, i) => `user${i}`);
    expect((await send(server, { path: `${API}/online?ids=${ids.join(',')}` })).status).toBe(200);
    const a = await send(server, { path: `${API}/online?ids=${[...ids, 'x'].join(',')}` });
    expect([a.status, a.json.error]).toEqual([413, 'too_many']);
  });

  it('refuses a body on GET', async () => {
    const a = await send(server, { method: 'GET', path: `${API}/online?ids=a`, body: '{}' });
    expect([a.status, a.json.error]).toEqual([400, 'bad_request']);
  });
});

describe('routes, methods, webhooks endpoints, rate limits', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ app: { rateLimit: { perSecond: 1, burst: 3 } } });
  });
  afterAll(() => server.close());

  it('answers not_found for unknown paths (unsigned too) and bad_method with Allow', async () => {
    for (const path of ['/', '/service/realtime', `${API}/emit/`, `${API}/emits`, `${API}/users/a/ask/x`, '/%ZZ']) {
      const a = await send(server, { method: 'POST', path, unsigned: true });
      expect([a.status, a.json.error], path).toEqual([404, 'not_found']);
    }
    const a = await send(server, { method: 'GET', path: `${API}/emit` });
    expect([a.status, a.json.error]).toEqual([405, 'bad_method']);
    expect(a.headers.allow).toBe('POST');
    const b = await send(server, { method: 'DELETE', path: `${API}/online` });
    expect([b.status, b.headers.allow]).toEqual([405, 'GET']);
  });

  it('answers malformed HTTP with 400 in the JSON error shape', async () => {
    const { connect } = await import('node:net');
    const url = new URL(server.url);
    const text = await new Promise<string>((resolve) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write('GARBAGE\r\n\r\n'));
      let got = '';
      socket.on('data', (d) => {
        got += d.toString();
      });
      socket.on('close', () => resolve(got));
    });
    expect(text).toMatch(/^HTTP\/1\.1 400/);
    expect(text).toContain('"error":"bad_request"');
  });

  it('answers CONNECT with 405 bad_method and HEAD errors without a body', async () => {
    const { connect } = await import('node:net');
    const url = new URL(server.url);
    const raw = (request: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(url.port), url.hostname, () => socket.write(request));
        let got = '';
        socket.on('data', (d) => {
          got += d.toString();
        });
        socket.on('close', () => resolve(got));
      });
    const tunnel = await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(tunnel).toMatch(/^HTTP\/1\.1 405/);
    expect(tunnel).toContain('"error":"bad_method"');
    const head = await raw(`HEAD ${API}/emit HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(17_000)}\r\n\r\n`);
    expect(head).toMatch(/^HTTP\/1\.1 400/);
    expect(head.endsWith('\r\n\r\n')).toBe(true);
  });

  it('rate limits per app with 429 rate_limited and Retry-After', async () => {
    // Burst of 3 then 1 per second: some of 8 quick requests are refused.
    const answers = [];
    for (let i = 0; i < 8; i++) answers.push(await send(server, { path: `${API}/online?ids=a` }));
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    for (const a of limited) {
      expect(a.json.error).toBe('rate_limited');
      expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(answers[0]?.status).toBe(200);
  });
});

describe('webhook endpoints of an app without a webhook address', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('answers no_webhook to list, test and resend', async () => {
    const list = await send(server, { path: `${API}/webhooks` });
    expect([list.status, list.json.error]).toEqual([409, 'no_webhook']);
    const test = await send(server, { method: 'POST', path: `${API}/webhooks/test` });
    expect([test.status, test.json.error]).toEqual([409, 'no_webhook']);
    const resend = await send(server, { method: 'POST', path: `${API}/webhooks/b_123/resend` });
    expect([resend.status, resend.json.error]).toEqual([409, 'no_webhook']);
    const withBody = await send(server, { method: 'POST', path: `${API}/webhooks/test`, body: '{"x":1}' });
    expect([withBody.status, withBody.json.error]).toEqual([400, 'bad_request']);
  });
});
