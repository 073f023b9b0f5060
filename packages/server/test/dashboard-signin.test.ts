import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashDashboardPassword, newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningServer, startServer } from '../src/index.js';
import { openConsole } from './console-stream.js';
import { type RawAnswer, send, startTestServer, type TestServer, testEngine } from './helpers.js';
import { startRedis, type TestRedis, uniquePrefix } from './redis-server.js';

/**
 * The dashboard's sign-in over raw HTTP, as docs/dashboard.md promises it: the session cookie and its
 * flags, the CSRF token and Origin check, the lockout per client address (counted in the rate-limit
 * store, so across the nodes of one Redis), fair turns for password checks under a flood, sessions
 * signed with the store's secret (none made from the hash) and recorded in the store (sign-out on
 * any node, restarts, password changes), and the error codes. Every request goes to 127.0.0.1;
 * client addresses other than the peer's come through a trusted proxy's X-Forwarded-For.
 */

const PASSWORD = 'correct horse battery staple';
const SESSION = '/dashboard/api/session';
const APPS = '/dashboard/api/apps';
const TWELVE_HOURS_S = 43_200;
const HASH_FORM = /^scrypt\$16384\$8\$1\$[^$]+\$[^$]+$/;

let hash: string;
let otherHash: string;
beforeAll(async () => {
  [hash, otherHash] = await Promise.all([hashDashboardPassword(PASSWORD), hashDashboardPassword('another password')]);
});

/** A fresh client address per use, so one test's wrong passwords never lock another's. */
let addresses = 0;
function newAddress(): string {
  addresses++;
  return `198.51.${Math.floor(addresses / 250)}.${(addresses % 250) + 1}`;
}

interface Ask {
  method: string;
  path?: string;
  body?: string;
  /** The value of the rt_dashboard cookie to send. */
  cookie?: string;
  csrf?: string;
  origin?: string;
  /** X-Forwarded-For: the client address, when the server trusts 127.0.0.1 as its proxy. */
  from?: string;
  headers?: [string, string][];
}

/** An unsigned request as a browser (or curl) sends it to the dashboard. */
function ask(server: TestServer, a: Ask): Promise<RawAnswer> {
  const headers: [string, string][] = [];
  if (a.cookie !== undefined) headers.push(['Cookie', `rt_dashboard=${a.cookie}`]);
  if (a.csrf !== undefined) headers.push(['X-CSRF-Token', a.csrf]);
  if (a.origin !== undefined) headers.push(['Origin', a.origin]);
  if (a.from !== undefined) headers.push(['X-Forwarded-For', a.from]);
  headers.push(...(a.headers ?? []));
  return send(server, {
    method: a.method,
    path: a.path ?? SESSION,
    unsigned: true,
    headers,
    ...(a.body === undefined ? {} : { body: a.body }),
  });
}

function signIn(server: TestServer, password: unknown, extra: Partial<Ask> = {}): Promise<RawAnswer> {
  return ask(server, { method: 'POST', body: JSON.stringify({ password }), ...extra });
}

interface SetCookie {
  value: string;
  /** Attribute names, lower case, in order. */
  names: string[];
  attrs: Map<string, string>;
}

/** The rt_dashboard cookies an answer sets (a well-behaved answer sets at most one). */
function setCookies(answer: RawAnswer): SetCookie[] {
  const raw = answer.headers['set-cookie'] ?? [];
  return (Array.isArray(raw) ? raw : [raw])
    .filter((line) => line.startsWith('rt_dashboard='))
    .map((line) => {
      const [pair = '', ...parts] = line.split(';').map((part) => part.trim());
      const attrs = new Map<string, string>();
      for (const part of parts) {
        const at = part.indexOf('=');
        attrs.set((at < 0 ? part : part.slice(0, at)).toLowerCase(), at < 0 ? '' : part.slice(at + 1));
      }
      return { value: pair.slice('rt_dashboard='.length), names: [...attrs.keys()], attrs };
    });
}

/** The one session cookie of a sign-in. */
function sessionCookie(answer: RawAnswer): SetCookie {
  const cookies = setCookies(answer);
  expect(cookies, JSON.stringify(answer.headers['set-cookie'])).toHaveLength(1);
  return cookies[0] as SetCookie;
}

/** The API's error shape: exactly ok, error and a one-line message; JSON; no cookie set. */
function expectError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.json).toEqual({ ok: false, error: code, message: expect.any(String) });
  const message = answer.json.message as string;
  expect(message.length).toBeGreaterThan(0);
  expect(message).not.toMatch(/[\r\n]/);
  expect(setCookies(answer)).toEqual([]);
}

/** Signs in (as `from`, if given) and returns the cookie value and CSRF token. */
async function session(server: TestServer, from?: string): Promise<{ cookie: string; csrf: string }> {
  const answer = await signIn(server, PASSWORD, from === undefined ? {} : { from });
  expect(answer.status, answer.text).toBe(200);
  return { cookie: sessionCookie(answer).value, csrf: answer.json.csrf as string };
}

/** The known-browser cookie a sign-in sets (rt_dashboard_device), if any. */
function deviceCookie(answer: RawAnswer): string | undefined {
  const raw = answer.headers['set-cookie'] ?? [];
  const line = (Array.isArray(raw) ? raw : [raw]).find((one) => one.startsWith('rt_dashboard_device='));
  return line?.split(';')[0]?.slice('rt_dashboard_device='.length);
}

/**
 * Wrong passwords from `count` addresses never seen before, `inFlight` at a time, each sent as
 * the one before it is answered (a flood that keeps every place taken). `full` resolves at its
 * first `503 busy`: from then on, every place waiting on the node is taken.
 */
function flood(server: TestServer, count: number, inFlight: number) {
  const answers: RawAnswer[] = [];
  let sent = 0;
  let onFull: () => void = () => {};
  const full = new Promise<void>((resolve) => {
    onFull = resolve;
  });
  const lane = async () => {
    while (sent < count) {
      sent++;
      const answer = await signIn(server, `flood ${sent}`, { from: newAddress() });
      if (answer.status === 503) onFull();
      answers.push(answer);
    }
  };
  const done = Promise.all(Array.from({ length: inFlight }, lane)).then(() => answers);
  // A flood that never filled the node must not leave the test waiting on `full`.
  void done.then(onFull);
  return { full, done };
}

/** Every answer of a flood: its wrong password checked, or refused busy; never locked. */
function expectFloodAnswers(answers: RawAnswer[], count: number): void {
  expect(answers).toHaveLength(count);
  const busy = answers.filter((answer) => answer.status === 503);
  expect(busy.length, 'the flood filled every place').toBeGreaterThan(0);
  for (const answer of answers) {
    if (answer.status === 503) expectError(answer, 503, 'busy');
    else expectError(answer, 401, 'wrong_password');
  }
}

/** The cookie value with one character changed, at a place where every bit of it counts. */
function tampered(value: string, at: number): string {
  const base64url = /[A-Za-z0-9_-]/;
  // The last character of a base64 run may carry unused bits: pick one followed by another of its run.
  let i = at;
  while (i < value.length - 1 && !(base64url.test(value[i] ?? '') && base64url.test(value[i + 1] ?? ''))) i++;
  const old = value[i] ?? 'A';
  const changed = old === 'A' ? 'B' : 'A';
  return `${value.slice(0, i)}${changed}${value.slice(i + 1)}`;
}

describe('hashDashboardPassword', () => {
  it('makes scrypt$16384$8$1$<salt>$<hash>, with a new salt each time', async () => {
    expect(hash).toMatch(HASH_FORM);
    const again = await hashDashboardPassword(PASSWORD);
    expect(again).toMatch(HASH_FORM);
    expect(again).not.toBe(hash);
    expect(again).not.toContain(PASSWORD);
  });
});

describe('the dashboard without a password hash', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('answers 404 not_found at every /dashboard/ address, sign-in included', async () => {
    expectError(await ask(server, { method: 'GET' }), 404, 'not_found');
    expectError(await signIn(server, PASSWORD), 404, 'not_found');
    expectError(await ask(server, { method: 'DELETE' }), 404, 'not_found');
    expectError(await ask(server, { method: 'GET', path: APPS }), 404, 'not_found');
    expectError(await ask(server, { method: 'GET', path: '/dashboard/' }), 404, 'not_found');
  });
});

describe('signing in', () => {
  let server: TestServer;
  let plain: TestServer;
  beforeAll(async () => {
    [server, plain] = await Promise.all([
      startTestServer({ dashboard: { passwordHash: hash }, limits: { trustProxy: ['127.0.0.1'] } }),
      // No trusted proxy: its X-Forwarded-* headers are anyone's.
      startTestServer({ dashboard: { passwordHash: hash } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), plain?.close()]);
  });

  it('the right password: 200 { ok, csrf } and the session cookie, HttpOnly, SameSite=Strict, 12 h, not Secure over http', async () => {
    const answer = await signIn(server, PASSWORD, { from: newAddress() });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.json).toEqual({ ok: true, csrf: expect.any(String) });
    expect((answer.json.csrf as string).length).toBeGreaterThan(0);
    const cookie = sessionCookie(answer);
    expect(cookie.value.length).toBeGreaterThan(0);
    expect(cookie.value).not.toContain(PASSWORD);
    expect([...cookie.names].sort()).toEqual(['httponly', 'max-age', 'path', 'samesite']);
    expect(cookie.attrs.get('path')).toBe('/dashboard');
    expect(cookie.attrs.get('samesite')?.toLowerCase()).toBe('strict');
    expect(cookie.attrs.get('max-age')).toBe(String(TWELVE_HOURS_S));
    expect(cookie.names).not.toContain('secure');
    // Beside it, the known-browser cookie (it opens nothing): 30 days, HttpOnly, SameSite=Strict.
    const raw = answer.headers['set-cookie'] ?? [];
    const device = (Array.isArray(raw) ? raw : [raw]).find((line) => line.startsWith('rt_dashboard_device='));
    expect(device).toMatch(
      /^rt_dashboard_device=d1\.\d+\.[A-Za-z0-9_-]{43}; Path=\/dashboard; Max-Age=2592000; HttpOnly; SameSite=Strict$/,
    );
    const value = deviceCookie(answer) as string;
    expectError(await ask(server, { method: 'GET', cookie: value }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', path: APPS, cookie: value }), 401, 'signed_out');
  });

  it('from a browser on the same origin (Origin matches Host): 200', async () => {
    const answer = await signIn(server, PASSWORD, { from: newAddress(), origin: server.url });
    expect(answer.status, answer.text).toBe(200);
    sessionCookie(answer);
  });

  it('is Secure when X-Forwarded-Proto: https comes from a trusted proxy', async () => {
    const answer = await signIn(server, PASSWORD, {
      from: newAddress(),
      origin: server.url.replace('http:', 'https:'),
      headers: [['X-Forwarded-Proto', 'https']],
    });
    expect(answer.status, answer.text).toBe(200);
    const cookie = sessionCookie(answer);
    expect([...cookie.names].sort()).toEqual(['httponly', 'max-age', 'path', 'samesite', 'secure']);
  });

  it('is not Secure when X-Forwarded-Proto: https comes from a peer that is no trusted proxy', async () => {
    const answer = await signIn(plain, PASSWORD, { headers: [['X-Forwarded-Proto', 'https']] });
    expect(answer.status, answer.text).toBe(200);
    expect(sessionCookie(answer).names).not.toContain('secure');
  });

  it('from another origin: 403 bad_csrf and no cookie, so another site cannot sign a browser in', async () => {
    const port = new URL(server.url).port;
    for (const origin of ['http://evil.example', `http://evil.example:${port}`, 'http://127.0.0.1:1', 'null']) {
      const answer = await signIn(server, PASSWORD, { from: newAddress(), origin });
      expectError(answer, 403, 'bad_csrf');
    }
  });

  it('a wrong or empty password: 401 wrong_password and no cookie', async () => {
    expectError(await signIn(server, 'Correct horse battery staple', { from: newAddress() }), 401, 'wrong_password');
    expectError(await signIn(server, `${PASSWORD} `, { from: newAddress() }), 401, 'wrong_password');
    expectError(await signIn(server, '', { from: newAddress() }), 401, 'wrong_password');
  });

  it('a body without a password: 401 wrong_password, as docs/dashboard.md says ("or is missing")', async () => {
    expectError(await ask(server, { method: 'POST', body: '{}', from: newAddress() }), 401, 'wrong_password');
  });

  it('a body that is not JSON { "password": <string> } of at most 4 KB: 400 bad_request', async () => {
    const bodies = [
      'not json',
      '',
      '{"password":',
      '[]',
      'null',
      '"correct horse battery staple"',
      JSON.stringify({ password: 12345 }),
      JSON.stringify({ password: null }),
      JSON.stringify({ password: [PASSWORD] }),
      JSON.stringify({ password: 'x'.repeat(5000) }),
      // The right password, padded past 4 KB: refused for its size, not checked.
      JSON.stringify({ password: PASSWORD, pad: ' '.repeat(4200) }),
    ];
    for (const body of bodies) {
      const answer = await ask(server, { method: 'POST', body, from: newAddress() });
      expect(answer.status, `${body.slice(0, 40)}: ${answer.text}`).toBe(400);
      expectError(answer, 400, 'bad_request');
    }
  });
});

describe('a signed-in session', () => {
  let server: TestServer;
  let sameHash: TestServer;
  let otherPassword: TestServer;
  const second = newApp({
    name: 'second',
    webhook: 'https://hooks.example.com/realtime',
    features: ['ask'],
    rateLimit: { perSecond: 10, burst: 10 },
  });
  beforeAll(async () => {
    [server, sameHash, otherPassword] = await Promise.all([
      startTestServer({ dashboard: { passwordHash: hash }, apps: [second], limits: { trustProxy: ['127.0.0.1'] } }),
      startTestServer({ dashboard: { passwordHash: hash } }),
      startTestServer({ dashboard: { passwordHash: otherHash } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), sameHash?.close(), otherPassword?.close()]);
  });

  it('GET session with the cookie: 200 and the same csrf, among the other cookies of the site too', async () => {
    const { cookie, csrf } = await session(server, newAddress());
    const answer = await ask(server, { method: 'GET', cookie });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json).toEqual({ ok: true, csrf });
    const among = await ask(server, {
      method: 'GET',
      headers: [['Cookie', `theme=dark; rt_dashboard=${cookie}; other=1`]],
    });
    expect(among.json).toEqual({ ok: true, csrf });
  });

  it('GET session without a cookie, with a tampered or made-up one: 401 signed_out', async () => {
    const { cookie } = await session(server, newAddress());
    expectError(await ask(server, { method: 'GET' }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', cookie: '' }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', cookie: 'made-up' }), 401, 'signed_out');
    for (const at of [0, 0.25, 0.5, 0.75, 0.95].map((share) => Math.floor(cookie.length * share))) {
      const forged = tampered(cookie, at);
      expect(forged).not.toBe(cookie);
      expectError(await ask(server, { method: 'GET', cookie: forged }), 401, 'signed_out');
    }
    expectError(await ask(server, { method: 'GET', cookie: `${cookie}A` }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', cookie: cookie.slice(0, -2) }), 401, 'signed_out');
    // The cookie under another name is no session.
    const renamed = await ask(server, { method: 'GET', headers: [['Cookie', `rt_other=${cookie}`]] });
    expectError(renamed, 401, 'signed_out');
  });

  it('GET apps with the cookie lists every app without its secret; without the cookie 401 signed_out', async () => {
    const { cookie } = await session(server, newAddress());
    const answer = await ask(server, { method: 'GET', path: APPS, cookie });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.ok).toBe(true);
    const apps = answer.json.apps as Record<string, unknown>[];
    expect(Array.isArray(apps)).toBe(true);
    const find = (key: string) => apps.find((app) => app.key === key);
    for (const app of [server.app, second]) {
      expect(find(app.key)).toEqual({
        key: app.key,
        name: app.name,
        features: app.features,
        rateLimit: app.rateLimit,
        webhook: app.webhook,
      });
      expect(answer.text).not.toContain(app.secret);
    }
    expect(answer.text).not.toMatch(/secret/i);
    expectError(await ask(server, { method: 'GET', path: APPS }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', path: APPS, cookie: tampered(cookie, 0) }), 401, 'signed_out');
  });

  it('signing out needs the X-CSRF-Token of the session and, when Origin is sent, the same host: else 403 bad_csrf', async () => {
    const { cookie, csrf } = await session(server, newAddress());
    const other = await session(server, newAddress());
    expectError(await ask(server, { method: 'DELETE', cookie }), 403, 'bad_csrf');
    expectError(await ask(server, { method: 'DELETE', cookie, csrf: '' }), 403, 'bad_csrf');
    expectError(await ask(server, { method: 'DELETE', cookie, csrf: `${csrf}x` }), 403, 'bad_csrf');
    expectError(await ask(server, { method: 'DELETE', cookie, csrf: csrf.slice(1) }), 403, 'bad_csrf');
    if (other.csrf !== csrf) {
      expectError(await ask(server, { method: 'DELETE', cookie, csrf: other.csrf }), 403, 'bad_csrf');
    }
    expectError(await ask(server, { method: 'DELETE', cookie, csrf, origin: 'http://evil.example' }), 403, 'bad_csrf');
    expectError(await ask(server, { method: 'DELETE', cookie, csrf, origin: 'null' }), 403, 'bad_csrf');
    // Still signed in after every refusal.
    expect((await ask(server, { method: 'GET', cookie })).json).toEqual({ ok: true, csrf });

    const out = await ask(server, { method: 'DELETE', cookie, csrf, origin: server.url });
    expect(out.status, out.text).toBe(200);
    expect(out.json).toEqual({ ok: true });
    const cleared = sessionCookie(out);
    expect(cleared.attrs.get('max-age')).toBe('0');
    expect(cleared.attrs.get('path')).toBe('/dashboard');
  });

  it('signing out without Origin (not a browser) with the right token: 200 and the cookie cleared', async () => {
    const { cookie, csrf } = await session(server, newAddress());
    const out = await ask(server, { method: 'DELETE', cookie, csrf });
    expect(out.status, out.text).toBe(200);
    expect(out.json).toEqual({ ok: true });
    expect(sessionCookie(out).attrs.get('max-age')).toBe('0');
    // The session itself ended: a copy of the cookie taken before is refused too.
    expectError(await ask(server, { method: 'GET', cookie }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', path: APPS, cookie }), 401, 'signed_out');
    expectError(await ask(server, { method: 'DELETE', cookie, csrf }), 401, 'signed_out');
  });

  it('is refused by another service, with the same password hash (its own secret) or another (signed_out)', async () => {
    const { cookie, csrf } = await session(server, newAddress());
    expectError(await ask(sameHash, { method: 'GET', cookie }), 401, 'signed_out');
    expectError(await ask(otherPassword, { method: 'GET', cookie }), 401, 'signed_out');
    expectError(await ask(otherPassword, { method: 'GET', path: APPS, cookie }), 401, 'signed_out');
    expectError(await ask(otherPassword, { method: 'DELETE', cookie, csrf }), 401, 'signed_out');
    // And the other way round.
    const theirs = await signIn(otherPassword, 'another password');
    expect(theirs.status, theirs.text).toBe(200);
    expectError(await ask(server, { method: 'GET', cookie: sessionCookie(theirs).value }), 401, 'signed_out');
  });

  it('a method an address does not take: 405 bad_method with Allow; another /dashboard/api/ address: 404', async () => {
    const { cookie, csrf } = await session(server, newAddress());
    const put = await ask(server, { method: 'PUT', cookie, csrf, body: JSON.stringify({ password: PASSWORD }) });
    expectError(put, 405, 'bad_method');
    const allowSession = String(put.headers.allow ?? '')
      .split(',')
      .map((m) => m.trim().toUpperCase());
    expect(allowSession).toEqual(expect.arrayContaining(['GET', 'POST', 'DELETE']));
    expect(allowSession).not.toContain('PUT');

    const putApps = await ask(server, { method: 'PUT', path: APPS, cookie, csrf, body: '{}' });
    expectError(putApps, 405, 'bad_method');
    const allowApps = String(putApps.headers.allow ?? '')
      .split(',')
      .map((m) => m.trim().toUpperCase());
    expect(allowApps).toEqual(expect.arrayContaining(['GET', 'POST']));
    expect(allowApps).not.toContain('PUT');

    expectError(await ask(server, { method: 'GET', path: '/dashboard/api/x', cookie }), 404, 'not_found');
    expectError(await ask(server, { method: 'GET', path: '/dashboard/api/sessions', cookie }), 404, 'not_found');
  });
});

describe('session expiry, on the server clock', () => {
  let server: TestServer;
  let clock = Date.now();
  beforeAll(async () => {
    server = await startTestServer({ dashboard: { passwordHash: hash }, now: () => clock });
  });
  afterAll(() => server?.close());

  it('a cookie is taken for 12 hours, then 401 signed_out', async () => {
    const { cookie, csrf } = await session(server);
    clock += (TWELVE_HOURS_S - 60) * 1000;
    expect((await ask(server, { method: 'GET', cookie })).json).toEqual({ ok: true, csrf });
    clock += 61 * 1000;
    expectError(await ask(server, { method: 'GET', cookie }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', path: APPS, cookie }), 401, 'signed_out');
  });
});

describe('the lockout per client address', () => {
  let server: TestServer;
  let untrusting: TestServer;
  let clocked: TestServer;
  let clock = Date.now();
  beforeAll(async () => {
    [server, untrusting, clocked] = await Promise.all([
      startTestServer({ dashboard: { passwordHash: hash }, limits: { trustProxy: ['127.0.0.1'] } }),
      startTestServer({ dashboard: { passwordHash: hash } }),
      startTestServer({ dashboard: { passwordHash: hash }, limits: { trustProxy: ['127.0.0.1'] }, now: () => clock }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), untrusting?.close(), clocked?.close()]);
  });

  function expectLocked(answer: RawAnswer, atMost = 180): number {
    expectError(answer, 429, 'locked');
    const retry = String(answer.headers['retry-after']);
    expect(retry).toMatch(/^[1-9]\d*$/);
    expect(Number(retry)).toBeLessThanOrEqual(atMost);
    return Number(retry);
  }

  it('5 wrong passwords, then even the right one: 429 locked with Retry-After; another address still signs in', async () => {
    const [locked, neighbour] = [newAddress(), newAddress()];
    // Signing in right takes no try; the session it opens outlives the lockout (which is on signing in).
    const before = await session(server, locked);
    for (let i = 0; i < 5; i++) {
      expectError(await signIn(server, `wrong ${i}`, { from: locked }), 401, 'wrong_password');
    }
    expectLocked(await signIn(server, PASSWORD, { from: locked }));
    expectLocked(await signIn(server, 'wrong again', { from: locked }));
    // Another client address behind the same proxy is not locked.
    await session(server, neighbour);
    expect((await ask(server, { method: 'GET', cookie: before.cookie, from: locked })).json).toEqual({
      ok: true,
      csrf: before.csrf,
    });
  });

  it('wrong passwords sent all at once are checked one at a time: the others are 503 busy (not locked), and only checked ones take a try', async () => {
    const from = newAddress();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => signIn(server, `parallel guess ${i}`, { from })),
    );
    const codes = answers.map((answer) => answer.json.error);
    const checked = codes.filter((code) => code === 'wrong_password').length;
    expect(checked, codes.join(' ')).toBeGreaterThanOrEqual(1);
    expect(checked, codes.join(' ')).toBeLessThanOrEqual(5);
    for (const answer of answers.filter((a) => a.json.error !== 'wrong_password')) {
      // Either waiting for the check of the same address, or (once the tries checked ran out) locked.
      if (answer.status === 503) {
        expectError(answer, 503, 'busy');
        expect(answer.headers['retry-after']).toBe('1');
      } else {
        expectLocked(answer);
        expect(answer.json.message).toContain('too many wrong passwords');
      }
    }
    // The tries left are exactly 5 less those checked: then even the right password is locked out.
    for (let i = checked; i < 5; i++) {
      expectError(await signIn(server, `one after another ${i}`, { from }), 401, 'wrong_password');
    }
    expectLocked(await signIn(server, PASSWORD, { from }));
  });

  it('the right password sent several times at once from an address not locked is never refused locked', async () => {
    const from = newAddress();
    const answers = await Promise.all(Array.from({ length: 6 }, () => signIn(server, PASSWORD, { from })));
    const statuses = answers.map((answer) => `${answer.status} ${answer.json.error ?? ''}`);
    expect(answers.filter((answer) => answer.status === 200).length, statuses.join(', ')).toBeGreaterThanOrEqual(1);
    for (const answer of answers) {
      if (answer.status === 200) continue;
      expectError(answer, 503, 'busy');
      expect(answer.headers['retry-after']).toBe('1');
    }
  });

  it('sign-ins from many addresses at once wait their turn: every one is checked, none is locked', async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => signIn(server, PASSWORD, { from: newAddress() })),
    );
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
  });

  it('X-Forwarded-For from a peer that is no trusted proxy does not make a new address', async () => {
    for (let i = 0; i < 5; i++) {
      expectError(await signIn(untrusting, `wrong ${i}`, { from: newAddress() }), 401, 'wrong_password');
    }
    expectLocked(await signIn(untrusting, PASSWORD, { from: newAddress() }));
    expectLocked(await signIn(untrusting, PASSWORD));
  });

  it('a try comes back every 3 minutes', async () => {
    const from = newAddress();
    for (let i = 0; i < 5; i++) {
      expectError(await signIn(clocked, `wrong ${i}`, { from }), 401, 'wrong_password');
    }
    expect(expectLocked(await signIn(clocked, PASSWORD, { from }))).toBeGreaterThanOrEqual(179);
    clock += 120_000;
    const later = expectLocked(await signIn(clocked, PASSWORD, { from }), 60);
    expect(later).toBeGreaterThanOrEqual(59);
    clock += 61_000;
    // One try is back: the right password signs in and takes none of it.
    await session(clocked, from);
    expectError(await signIn(clocked, 'wrong again', { from }), 401, 'wrong_password');
    expectLocked(await signIn(clocked, PASSWORD, { from }));
  });
});

describe('the lockout on two nodes of one Redis', () => {
  let redis: TestRedis;
  let nodes: TestServer[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    const engine = { kind: 'redis' as const, url: redis.url, prefix: uniquePrefix('dashboard') };
    const app = newApp({ name: 'cluster', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    nodes = await Promise.all(
      [0, 1].map(() =>
        startTestServer({ dashboard: { passwordHash: hash }, limits: { trustProxy: ['127.0.0.1'] }, engine, app }),
      ),
    );
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.close()));
    await redis?.close();
  });

  it('two nodes signing in for the first time at once agree on the secret: each takes the other’s session', async () => {
    const [a, b] = nodes as [TestServer, TestServer];
    const [onA, onB] = await Promise.all([session(a, newAddress()), session(b, newAddress())]);
    expect((await ask(b, { method: 'GET', cookie: onA.cookie })).json).toEqual({ ok: true, csrf: onA.csrf });
    expect((await ask(a, { method: 'GET', cookie: onB.cookie })).json).toEqual({ ok: true, csrf: onB.csrf });
  });

  it('signing out on one node ends the session on the other', async () => {
    const [a, b] = nodes as [TestServer, TestServer];
    const { cookie, csrf } = await session(a, newAddress());
    expect((await ask(b, { method: 'GET', cookie })).json).toEqual({ ok: true, csrf });
    expect((await ask(b, { method: 'DELETE', cookie, csrf })).json).toEqual({ ok: true });
    expectError(await ask(a, { method: 'GET', cookie }), 401, 'signed_out');
    expectError(await ask(a, { method: 'GET', path: APPS, cookie }), 401, 'signed_out');
  });

  it('a live console ends with its session: at once on the node signed out on, within 5 s on another', async () => {
    const [a, b] = nodes as [TestServer, TestServer];
    const { cookie, csrf } = await session(a, newAddress());
    const here = await openConsole(a, a.app.key, cookie);
    const there = await openConsole(b, b.app.key, cookie);
    expect([here.status, there.status]).toEqual([200, 200]);
    try {
      expect((await ask(a, { method: 'DELETE', cookie, csrf })).json).toEqual({ ok: true });
      await here.until(() => here.ended, 'the console on the node signed out on to end', 1000);
      await there.until(() => there.ended, 'the console on the other node to end', 10_000);
    } finally {
      here.close();
      there.close();
    }
  });

  it('a locked address flooding one node crowds out no operator, on either node', async () => {
    const [a, b] = nodes as [TestServer, TestServer];
    const locked = newAddress();
    for (let i = 0; i < 5; i++) {
      expectError(await signIn(i % 2 === 0 ? a : b, `wrong ${i}`, { from: locked }), 401, 'wrong_password');
    }
    const flood: Promise<RawAnswer>[] = [];
    const operator: Promise<RawAnswer>[] = [];
    for (let i = 0; i < 60; i++) {
      flood.push(signIn(a, PASSWORD, { from: locked }));
      if (i % 10 === 9) operator.push(signIn(i % 20 === 9 ? a : b, PASSWORD, { from: newAddress() }));
    }
    for (const answer of await Promise.all(operator)) expect(answer.status, answer.text).toBe(200);
    for (const answer of await Promise.all(flood)) expectError(answer, 429, 'locked');
  });

  it('a browser that signed in on one node gets the right password through a flood from 600 new addresses on the other', async () => {
    const [a, b] = nodes as [TestServer, TestServer];
    const first = await signIn(b, PASSWORD, { from: newAddress() });
    expect(first.status, first.text).toBe(200);
    const device = deviceCookie(first);
    const storm = flood(a, 600, 100);
    await storm.full;
    const operator = await signIn(a, PASSWORD, {
      from: newAddress(),
      headers: device === undefined ? [] : [['Cookie', `rt_dashboard_device=${device}`]],
    });
    // The flood ends before anything is checked: a failure must not leave it running into the next test.
    const answers = await storm.done;
    expect(operator.status, operator.text).toBe(200);
    expect(device).toBeDefined();
    expectFloodAnswers(answers, 600);
  });

  it('counts the tries of an address over every node; a session of one node is taken by the other', async () => {
    const [a, b] = nodes as [TestServer, TestServer];
    const from = newAddress();
    for (let i = 0; i < 5; i++) {
      const node = i % 2 === 0 ? a : b;
      expectError(await signIn(node, `wrong ${i}`, { from }), 401, 'wrong_password');
    }
    for (const node of nodes) {
      const answer = await signIn(node, PASSWORD, { from });
      expectError(answer, 429, 'locked');
      expect(String(answer.headers['retry-after'])).toMatch(/^[1-9]\d*$/);
    }
    const { cookie, csrf } = await session(a, newAddress());
    expect((await ask(b, { method: 'GET', cookie })).json).toEqual({ ok: true, csrf });
    const out = await ask(b, { method: 'DELETE', cookie, csrf, origin: b.url });
    expect(out.json).toEqual({ ok: true });
  });
});

/** The old scheme's cookie: what anyone who read the hash could sign (the attack of issue 17). */
function builtFromHash(passwordHash: string, expiresS: number): { cookie: string; csrf: string } {
  const key = createHmac('sha256', 'realtime dashboard session v1').update(passwordHash).digest();
  const nonce = randomBytes(16).toString('base64url');
  const body = `v1.${expiresS}.${nonce}`;
  return {
    cookie: `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`,
    csrf: createHmac('sha256', key).update(`csrf.${nonce}`).digest('base64url'),
  };
}

describe('sessions no one can make from the password hash', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dashboard: { passwordHash: hash } });
  });
  afterAll(() => server?.close());

  it('a cookie built from the hash (and its CSRF token) is refused: 401 signed_out, nothing changed', async () => {
    const built = builtFromHash(hash, Math.floor(Date.now() / 1000) + 3600);
    expectError(await ask(server, { method: 'GET', cookie: built.cookie }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', path: APPS, cookie: built.cookie }), 401, 'signed_out');
    const create = await ask(server, {
      method: 'POST',
      path: APPS,
      cookie: built.cookie,
      csrf: built.csrf,
      body: JSON.stringify({ name: 'made by a forger' }),
    });
    expectError(create, 401, 'signed_out');
  });

  it('a cookie built from the hash with an expiry 10 years ahead is refused', async () => {
    const built = builtFromHash(hash, Math.floor(Date.now() / 1000) + 10 * 365 * 24 * 3600);
    expectError(await ask(server, { method: 'GET', cookie: built.cookie }), 401, 'signed_out');
    expectError(await ask(server, { method: 'GET', path: APPS, cookie: built.cookie }), 401, 'signed_out');
  });

  it('a real cookie with its times changed is refused (the expiry is its issue time + 12 h, signed)', async () => {
    const { cookie } = await session(server);
    const parts = cookie.split('.');
    for (let i = 0; i < parts.length; i++) {
      if (!/^\d+$/.test(parts[i] ?? '')) continue;
      const later = [...parts];
      later[i] = String(Number(parts[i]) + 10 * 365 * 24 * 3600);
      expectError(await ask(server, { method: 'GET', cookie: later.join('.') }), 401, 'signed_out');
    }
  });
});

describe('sessions over a restart and a password change', () => {
  const dirs: string[] = [];
  const running: RunningServer[] = [];
  afterAll(async () => {
    await Promise.all(running.map((one) => one.close()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** A service on `dataDir` (its engine the project's, Redis's prefix named by the folder). */
  async function start(dataDir: string, passwordHash: string): Promise<RunningServer> {
    const server = await startServer({
      host: '127.0.0.1',
      port: 0,
      dataDir,
      logLevel: 'silent',
      engine: await testEngine(dataDir),
      dashboard: { passwordHash },
    });
    running.push(server);
    return server;
  }

  async function stop(server: RunningServer): Promise<void> {
    running.splice(running.indexOf(server), 1);
    await server.close();
  }

  const folder = () => {
    const dir = mkdtempSync(join(tmpdir(), 'realtime-dashboard-restart-'));
    dirs.push(dir);
    return dir;
  };
  /** What the requests of this file take: a server's URL (the app and folder are not used). */
  const asServer = (server: RunningServer): TestServer => ({ ...server, app: newApp({ name: 'unused' }), dataDir: '' });

  it('a restart keeps every session, with its CSRF token', async () => {
    const dir = folder();
    const first = await start(dir, hash);
    const { cookie, csrf } = await session(asServer(first));
    await stop(first);
    const second = asServer(await start(dir, hash));
    expect((await ask(second, { method: 'GET', cookie })).json).toEqual({ ok: true, csrf });
    // And signing out after the restart still ends it.
    expect((await ask(second, { method: 'DELETE', cookie, csrf })).json).toEqual({ ok: true });
    expectError(await ask(second, { method: 'GET', cookie }), 401, 'signed_out');
  });

  it('a password change (another hash at the next start) ends every session', async () => {
    const dir = folder();
    const first = await start(dir, hash);
    const { cookie } = await session(asServer(first));
    await stop(first);
    const changed = asServer(await start(dir, otherHash));
    expectError(await ask(changed, { method: 'GET', cookie }), 401, 'signed_out');
    expectError(await ask(changed, { method: 'GET', path: APPS, cookie }), 401, 'signed_out');
    // The new password's sessions work; back to the old hash, they end in turn.
    const theirs = await signIn(changed, 'another password');
    expect(theirs.status, theirs.text).toBe(200);
    const kept = sessionCookie(theirs).value;
    await stop(running.at(-1) as RunningServer);
    const back = asServer(await start(dir, hash));
    expectError(await ask(back, { method: 'GET', cookie: kept }), 401, 'signed_out');
  });
});

describe('sign-in under a flood of other sign-ins', () => {
  let server: TestServer;
  let small: TestServer;
  beforeAll(async () => {
    [server, small] = await Promise.all([
      startTestServer({ dashboard: { passwordHash: hash }, limits: { trustProxy: ['127.0.0.1'] } }),
      // Four addresses may wait for a check (64 by default): a flood of 30 overflows it.
      startTestServer({ dashboard: { passwordHash: hash, signInQueue: 4 }, limits: { trustProxy: ['127.0.0.1'] } }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), small?.close()]);
  });

  it('the right password from an address of its own gets through wrong ones sent at once from 30 others', async () => {
    const flood: Promise<RawAnswer>[] = [];
    const operator: Promise<RawAnswer>[] = [];
    for (let i = 0; i < 30; i++) {
      flood.push(signIn(server, `guess ${i}`, { from: newAddress() }));
      if (i % 10 === 9) operator.push(signIn(server, PASSWORD, { from: newAddress() }));
    }
    const mine = await Promise.all(operator);
    for (const answer of mine) expect(answer.status, answer.text).toBe(200);
    for (const answer of await Promise.all(flood)) expectError(answer, 401, 'wrong_password');
  });

  it('a browser that signed in before gets the right password through a flood from 600 addresses never seen', async () => {
    const first = await signIn(server, PASSWORD, { from: newAddress() });
    expect(first.status, first.text).toBe(200);
    const device = deviceCookie(first);
    const storm = flood(server, 600, 100);
    await storm.full;
    // From an address never seen either (a new IPv6 address, another network): the browser is known.
    const operator = await signIn(server, PASSWORD, {
      from: newAddress(),
      headers: device === undefined ? [] : [['Cookie', `rt_dashboard_device=${device}`]],
    });
    // The flood ends before anything is checked: a failure must not leave it running into the next test.
    const answers = await storm.done;
    expect(operator.status, operator.text).toBe(200);
    expect(device).toBeDefined();
    expectFloodAnswers(answers, 600);
  });

  it('a locked address flooding is refused before it waits for anything; the operator elsewhere signs in', async () => {
    const locked = newAddress();
    for (let i = 0; i < 5; i++) {
      expectError(await signIn(server, `wrong ${i}`, { from: locked }), 401, 'wrong_password');
    }
    const flood: Promise<RawAnswer>[] = [];
    const operator: Promise<RawAnswer>[] = [];
    for (let i = 0; i < 100; i++) {
      flood.push(signIn(server, i % 2 === 0 ? PASSWORD : `wrong ${i}`, { from: locked }));
      if (i % 20 === 19) operator.push(signIn(server, PASSWORD, { from: newAddress() }));
    }
    for (const answer of await Promise.all(operator)) expect(answer.status, answer.text).toBe(200);
    for (const answer of await Promise.all(flood)) {
      expectError(answer, 429, 'locked');
      expect(answer.json.message).toContain('too many wrong passwords');
    }
  });

  it('every place taken by addresses checked a moment ago: an address not checked lately still gets its turn', async () => {
    const flooders = Array.from({ length: 12 }, () => newAddress());
    for (const [i, address] of flooders.entries()) {
      expectError(await signIn(small, `first ${i}`, { from: address }), 401, 'wrong_password');
    }
    const flood = flooders.map((address, i) => signIn(small, `again ${i}`, { from: address }));
    const operator = await signIn(small, PASSWORD, { from: newAddress() });
    expect(operator.status, operator.text).toBe(200);
    for (const answer of await Promise.all(flood)) {
      if (answer.status === 503) expectError(answer, 503, 'busy');
      else expectError(answer, 401, 'wrong_password');
    }
  });

  it('more addresses at once than a node queues: the rest 503 busy with Retry-After, no try taken, none locked', async () => {
    const from = Array.from({ length: 30 }, () => newAddress());
    const answers = await Promise.all(from.map((address, i) => signIn(small, `guess ${i}`, { from: address })));
    const busy = from.filter((_, i) => answers[i]?.status === 503);
    expect(busy.length, answers.map((a) => a.status).join(' ')).toBeGreaterThanOrEqual(1);
    answers.forEach((answer) => {
      if (answer.status === 503) {
        expectError(answer, 503, 'busy');
        expect(String(answer.headers['retry-after'])).toMatch(/^[1-9]\d*$/);
      } else expectError(answer, 401, 'wrong_password');
    });
    // A refused sign-in took none of its address's tries: the right password gets in from each.
    for (const address of busy.slice(0, 5)) await session(small, address);
  });
});
