import { Realtime } from '@realtime/node';
import { CLOSE, FEATURES } from '@realtime/protocol';
import { type App, hashDashboardPassword, newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openConsole } from './console-stream.js';
import { API, type RawAnswer, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';
import { type Receiver, startReceiver } from './receiver.js';
import { startRedis, type TestRedis, uniquePrefix, untilItWorks } from './redis-server.js';

/**
 * The dashboard's apps over raw HTTP, as docs/dashboard.md ("Apps") promises them: list, create,
 * show, change, delete, reveal and rotate the secret; every rule's refusal; CSRF and the session on
 * each; and that what the dashboard does reaches the API and open pages at once on this node.
 */

const PASSWORD = 'correct horse battery staple';
const APPS = '/dashboard/api/apps';
const DEFAULT_RATE = { perSecond: 1000, burst: 2000 };
const GENERATED_KEY = /^app_[0-9a-f]{20}$/;

interface Session {
  cookie: string;
  csrf: string;
}

interface Ask {
  body?: unknown;
  /** Leave out the cookie, the CSRF token, or send this Origin. */
  noCookie?: boolean;
  noCsrf?: boolean;
  origin?: string;
  /** A body sent as is, not as JSON of `body`. */
  raw?: string;
}

let hash: string;
let server: TestServer;
/** A service started with --allow-private-webhooks. */
let lax: TestServer;
let session: Session;
let laxSession: Session;

async function signIn(target: TestServer): Promise<Session> {
  const answer = await send(target, {
    method: 'POST',
    path: '/dashboard/api/session',
    unsigned: true,
    body: JSON.stringify({ password: PASSWORD }),
  });
  expect(answer.status, answer.text).toBe(200);
  const raw = answer.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : [raw ?? '']).find((l) => l.startsWith('rt_dashboard=')) ?? '';
  return { cookie: (line.split(';')[0] ?? '').slice('rt_dashboard='.length), csrf: answer.json.csrf as string };
}

/** A dashboard request as the page sends it: the session cookie, and the CSRF token on changes. */
function dash(method: string, path: string, a: Ask = {}, target = server, s = target === lax ? laxSession : session) {
  const headers: [string, string][] = [];
  if (!a.noCookie) headers.push(['Cookie', `rt_dashboard=${s.cookie}`]);
  if (!a.noCsrf && method !== 'GET') headers.push(['X-CSRF-Token', s.csrf]);
  if (a.origin !== undefined) headers.push(['Origin', a.origin]);
  const body = a.raw ?? (a.body === undefined ? undefined : JSON.stringify(a.body));
  return send(target, { method, path, unsigned: true, headers, ...(body === undefined ? {} : { body }) });
}

const appPath = (key: string) => `${APPS}/${encodeURIComponent(key)}`;

function expectError(answer: RawAnswer, status: number, code: string): string {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json).toEqual({ ok: false, error: code, message: expect.any(String) });
  const message = answer.json.message as string;
  expect(message).not.toMatch(/[\r\n]/);
  return message;
}

/** A signed API request as the app `app` (key and secret) makes it: 200 when the app works. */
function apiAs(app: { key: string; secret: string }, path = `${API}/online?ids=alice`) {
  return send({ url: server.url, app: newApp(app) }, { path });
}

async function create(body: Record<string, unknown>, target = server): Promise<Record<string, unknown>> {
  const answer = await dash('POST', APPS, { body }, target);
  expect(answer.status, answer.text).toBe(201);
  return answer.json.app as Record<string, unknown>;
}

async function secretOf(key: string, target = server): Promise<string> {
  const answer = await dash('GET', `${appPath(key)}/secret`, {}, target);
  expect(answer.status, answer.text).toBe(200);
  expect(Object.keys(answer.json).sort()).toEqual(['ok', 'secret']);
  return answer.json.secret as string;
}

let made = 0;
const freshKey = (label: string) => `${label}.${process.pid}-${++made}`;

beforeAll(async () => {
  hash = await hashDashboardPassword(PASSWORD);
  [server, lax] = await Promise.all([
    startTestServer({ dashboard: { passwordHash: hash } }),
    startTestServer({ dashboard: { passwordHash: hash }, allowPrivateWebhooks: true }),
  ]);
  [session, laxSession] = await Promise.all([signIn(server), signIn(lax)]);
});
afterAll(async () => {
  await Promise.all([server?.close(), lax?.close()]);
});

describe('listing and showing apps', () => {
  it('lists every app by key as an AppView (with rateLimit, never a secret)', async () => {
    const b = newApp({ key: freshKey('list-b'), name: 'B', features: ['ask'], rateLimit: { perSecond: 3, burst: 4 } });
    const a = newApp({ key: freshKey('list-a'), name: 'A', webhook: 'https://hooks.example.com/a' });
    await server.apps.upsert(b);
    await server.apps.upsert(a);
    const answer = await dash('GET', APPS);
    expect(answer.status, answer.text).toBe(200);
    const apps = answer.json.apps as { key: string }[];
    const keys = apps.map((app) => app.key);
    expect(keys).toEqual([...keys].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    const view = (app: App) => ({
      key: app.key,
      name: app.name,
      features: app.features,
      rateLimit: app.rateLimit,
      webhook: app.webhook,
    });
    for (const app of [a, b, server.app]) {
      expect(apps.find((one) => one.key === app.key)).toEqual(view(app));
      expect(answer.text).not.toContain(app.secret);
    }
    expect(answer.text).not.toMatch(/secret/i);
  });

  it('shows one app; an unknown key answers 404 no_app', async () => {
    const shown = await dash('GET', appPath(server.app.key));
    expect(shown.status, shown.text).toBe(200);
    expect(shown.json).toEqual({
      ok: true,
      app: {
        key: server.app.key,
        name: server.app.name,
        features: server.app.features,
        rateLimit: server.app.rateLimit,
        webhook: '',
      },
    });
    expect(shown.text).not.toContain(server.app.secret);
    expectError(await dash('GET', appPath('ghost')), 404, 'no_app');
    expectError(await dash('GET', appPath('not a key at all')), 404, 'no_app');
    for (const path of ['', '/secret']) {
      expectError(await dash('GET', `${appPath('ghost')}${path}`), 404, 'no_app');
    }
  });

  it('without a session cookie every address answers 401 signed_out', async () => {
    const key = server.app.key;
    const asks: [string, string][] = [
      ['GET', APPS],
      ['POST', APPS],
      ['GET', appPath(key)],
      ['PATCH', appPath(key)],
      ['DELETE', appPath(key)],
      ['GET', `${appPath(key)}/secret`],
      ['POST', `${appPath(key)}/secret`],
    ];
    for (const [method, path] of asks) {
      const body = method === 'POST' && path === APPS ? { name: 'x' } : method === 'PATCH' ? { name: 'x' } : undefined;
      const answer = await dash(method, path, { noCookie: true, ...(body === undefined ? {} : { body }) });
      expect(expectError(answer, 401, 'signed_out'), `${method} ${path}`).toBeTruthy();
      expect(answer.text).not.toContain(server.app.secret);
    }
    // Nothing changed: the app is there with its secret.
    expect(await secretOf(key)).toBe(server.app.secret);
  });

  it('answers 405 bad_method with Allow for a method an address does not take', async () => {
    const put = await dash('PUT', appPath(server.app.key), { body: { name: 'x' } });
    expectError(put, 405, 'bad_method');
    expect(String(put.headers.allow).split(', ').sort()).toEqual(['DELETE', 'GET', 'PATCH']);
    const del = await dash('DELETE', `${appPath(server.app.key)}/secret`);
    expectError(del, 405, 'bad_method');
    expect(String(del.headers.allow).split(', ').sort()).toEqual(['GET', 'POST']);
    expectError(await dash('DELETE', APPS), 405, 'bad_method');
  });
});

describe('creating an app', () => {
  it('makes a key, a secret, every feature and the default rate limit when only a name is given; the app works on the API', async () => {
    const answer = await dash('POST', APPS, { body: { name: 'Shop' } });
    expect(answer.status, answer.text).toBe(201);
    expect(answer.text).not.toMatch(/secret/i);
    const app = answer.json.app as Record<string, unknown>;
    expect(app).toEqual({
      key: expect.stringMatching(GENERATED_KEY),
      name: 'Shop',
      features: [...FEATURES],
      rateLimit: DEFAULT_RATE,
      webhook: '',
    });
    const key = app.key as string;
    const secret = await secretOf(key);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secret).not.toBe(server.app.secret);
    expect((await dash('GET', appPath(key))).json.app).toEqual(app);

    const online = await apiAs({ key, secret });
    expect(online.status, online.text).toBe(200);
    const sdk = new Realtime({ url: server.url, key, secret });
    try {
      expect(await sdk.emit({ rooms: ['shop'], event: 'opened', data: 1 })).toBeDefined();
    } finally {
      await sdk.close();
    }
    // Two creations, two keys.
    const other = await create({ name: 'Shop' });
    expect(other.key).not.toBe(key);
  });

  it('takes a key, a plan, a rate limit and a webhook; the plan and the rate limit apply on the API', async () => {
    const key = freshKey('My_app-1');
    const body = {
      name: 'Ünïcode näme — 漢字 🚀',
      key,
      features: ['presence', 'history'],
      rateLimit: { perSecond: 1, burst: 2 },
      webhook: 'https://hooks.example.com/realtime?x=1',
    };
    const app = await create(body);
    // The plan is a set, in the protocol's order.
    expect(app).toEqual({ ...body, features: ['history', 'presence'] });
    const secret = await secretOf(key);
    const asApp = { url: server.url, app: newApp({ key, secret }) };
    // Two requests fill the burst; the third is over the limit.
    expect((await send(asApp, { path: `${API}/online?ids=a` })).status).toBe(200);
    expect((await send(asApp, { path: `${API}/online?ids=a` })).status).toBe(200);
    expectError(await send(asApp, { path: `${API}/online?ids=a` }), 429, 'rate_limited');
  });

  it('a plan without a feature refuses it on the API (not_included); a rate limit given in part keeps the default of the rest', async () => {
    const app = await create({ name: 'No ask', features: ['history'], rateLimit: { burst: 5 } });
    expect(app.features).toEqual(['history']);
    expect(app.rateLimit).toEqual({ perSecond: DEFAULT_RATE.perSecond, burst: 5 });
    const key = app.key as string;
    const secret = await secretOf(key);
    const asked = await send(
      { url: server.url, app: newApp({ key, secret }) },
      { path: `${API}/users/bob/ask`, body: JSON.stringify({ event: 'q', timeout: 1000 }) },
    );
    expectError(asked, 403, 'not_included');
    // An empty plan is a plan too.
    expect((await create({ name: 'Nothing', features: [] })).features).toEqual([]);
  });

  it('answers 409 exists for a key that is taken, and leaves that app as it was', async () => {
    const key = freshKey('taken');
    await create({ name: 'First', key });
    const secret = await secretOf(key);
    const message = expectError(await dash('POST', APPS, { body: { name: 'Second', key } }), 409, 'exists');
    expect(message).toContain(key);
    expectError(await dash('POST', APPS, { body: { name: 'Config', key: server.app.key } }), 409, 'exists');
    expect((await dash('GET', appPath(key))).json.app).toMatchObject({ name: 'First' });
    expect(await secretOf(key)).toBe(secret);
    expect(await secretOf(server.app.key)).toBe(server.app.secret);
  });

  // Each broken rule: 400 bad_request, a message naming the field.
  const refused: [string, unknown, string][] = [
    ['no name', {}, 'name'],
    ['an empty name', { name: '' }, 'name'],
    ['a name of 101 characters', { name: 'x'.repeat(101) }, 'name'],
    ['a name that is not a string', { name: 5 }, 'name'],
    ['a null name', { name: null }, 'name'],
    ['a name of only spaces', { name: '   ' }, 'name'],
    ['a name with a line break', { name: 'a\nb' }, 'name'],
    ['a key with a space', { name: 'n', key: 'a b' }, 'key'],
    ['a key with a colon', { name: 'n', key: 'a:b' }, 'key'],
    ['an empty key', { name: 'n', key: '' }, 'key'],
    ['a key of 65 characters', { name: 'n', key: 'k'.repeat(65) }, 'key'],
    ['a key that is not a string', { name: 'n', key: 12 }, 'key'],
    ['features that are not a list', { name: 'n', features: 'history' }, 'features'],
    ['an unknown feature', { name: 'n', features: ['history', 'teleport'] }, 'features[1]'],
    ['a feature that is not a string', { name: 'n', features: [1] }, 'features[0]'],
    ['a rate limit that is not an object', { name: 'n', rateLimit: 5 }, 'rateLimit'],
    ['a rate limit of 0', { name: 'n', rateLimit: { perSecond: 0, burst: 1 } }, 'rateLimit.perSecond'],
    ['a rate limit not whole', { name: 'n', rateLimit: { perSecond: 1.5 } }, 'rateLimit.perSecond'],
    ['a burst over 1,000,000', { name: 'n', rateLimit: { burst: 1_000_001 } }, 'rateLimit.burst'],
    ['a burst as text', { name: 'n', rateLimit: { burst: '5' } }, 'rateLimit.burst'],
    ['an unknown rate-limit field', { name: 'n', rateLimit: { perMinute: 5 } }, 'rateLimit'],
    ['a webhook that is not a string', { name: 'n', webhook: 5 }, 'webhook'],
    ['a webhook that is not a URL', { name: 'n', webhook: 'hooks.example.com' }, 'webhook'],
    ['an http:// webhook', { name: 'n', webhook: 'http://hooks.example.com/x' }, 'webhook'],
    ['a loopback webhook', { name: 'n', webhook: 'https://127.0.0.1/x' }, 'webhook'],
    ['a private webhook', { name: 'n', webhook: 'https://10.1.2.3/x' }, 'webhook'],
    ['a localhost webhook', { name: 'n', webhook: 'https://localhost:8443/x' }, 'webhook'],
    ['a webhook with credentials', { name: 'n', webhook: 'https://u:p@hooks.example.com/x' }, 'webhook'],
    ['a webhook with a #fragment', { name: 'n', webhook: 'https://hooks.example.com/x#y' }, 'webhook'],
    ['a webhook too long', { name: 'n', webhook: `https://hooks.example.com/${'x'.repeat(2100)}` }, 'webhook'],
    ['a secret (not taken)', { name: 'n', secret: 'my-own-secret-0000000000' }, 'secret'],
    ['an unknown field', { name: 'n', plan: ['ask'] }, 'plan'],
  ];
  it.each(refused)('refuses %s: 400 bad_request naming the field, and makes nothing', async (_what, body, field) => {
    const before = (await dash('GET', APPS)).json.apps;
    const message = expectError(await dash('POST', APPS, { body }), 400, 'bad_request');
    expect(message).toContain(field);
    expect(message.length).toBeLessThan(400);
    expect((await dash('GET', APPS)).json.apps).toEqual(before);
  });

  it('refuses a body that is not a JSON object of at most 16 KB: 400 bad_request', async () => {
    expectError(await dash('POST', APPS, { raw: 'not json' }), 400, 'bad_request');
    expectError(await dash('POST', APPS, { raw: '["name"]' }), 400, 'bad_request');
    expectError(await dash('POST', APPS, { raw: '' }), 400, 'bad_request');
    const big = JSON.stringify({ name: 'n', webhook: '', pad: 'x'.repeat(17 * 1024) });
    expectError(await dash('POST', APPS, { raw: big }), 400, 'bad_request');
  });

  it('takes http:// and local webhook addresses on a service started with --allow-private-webhooks', async () => {
    const app = await create({ name: 'Local', webhook: 'http://127.0.0.1:9/hook' }, lax);
    expect(app.webhook).toBe('http://127.0.0.1:9/hook');
    const changed = await dash('PATCH', appPath(app.key as string), { body: { webhook: 'http://localhost/x' } }, lax);
    expect(changed.status, changed.text).toBe(200);
    expect((changed.json.app as { webhook: string }).webhook).toBe('http://localhost/x');
    // Still no other scheme, nor credentials.
    const ftp = await dash('POST', APPS, { body: { name: 'n', webhook: 'ftp://127.0.0.1/x' } }, lax);
    expect(expectError(ftp, 400, 'bad_request')).toContain('webhook');
  });
});

describe('changing an app', () => {
  it('renames, changes the plan, the rate limit (in part) and the webhook; the secret stays', async () => {
    const key = freshKey('change');
    await create({ name: 'Before', key, rateLimit: { perSecond: 10, burst: 20 } });
    const secret = await secretOf(key);
    const steps: [Record<string, unknown>, Record<string, unknown>][] = [
      [{ name: 'After' }, { name: 'After' }],
      [{ features: ['webhooks', 'ask', 'ask'] }, { features: ['ask', 'webhooks'] }],
      [{ rateLimit: { perSecond: 7 } }, { rateLimit: { perSecond: 7, burst: 20 } }],
      [{ rateLimit: { burst: 70 } }, { rateLimit: { perSecond: 7, burst: 70 } }],
      [{ webhook: 'https://hooks.example.com/new' }, { webhook: 'https://hooks.example.com/new' }],
      [{ webhook: '' }, { webhook: '' }],
      [{}, {}],
    ];
    let expected: Record<string, unknown> = (await dash('GET', appPath(key))).json.app as Record<string, unknown>;
    for (const [body, change] of steps) {
      const answer = await dash('PATCH', appPath(key), { body });
      expect(answer.status, answer.text).toBe(200);
      expected = { ...expected, ...change };
      expect(answer.json).toEqual({ ok: true, app: expected });
      expect((await dash('GET', appPath(key))).json.app).toEqual(expected);
    }
    expect(await secretOf(key)).toBe(secret);
  });

  it('a changed plan applies to the API at once', async () => {
    const app = await create({ name: 'Plan' });
    const key = app.key as string;
    const as = { key, secret: await secretOf(key) };
    expect((await apiAs(as)).status).toBe(200);
    expect((await dash('PATCH', appPath(key), { body: { features: ['history'] } })).status).toBe(200);
    expectError(await apiAs(as), 403, 'not_included');
    expect((await dash('PATCH', appPath(key), { body: { features: ['presence'] } })).status).toBe(200);
    expect((await apiAs(as)).status).toBe(200);
  });

  const refused: [string, unknown, string][] = [
    ['an empty name', { name: '' }, 'name'],
    ['a name of 101 characters', { name: '🚀'.repeat(101) }, 'name'],
    ['the key', { key: 'another' }, 'key'],
    ['an unknown feature', { features: ['teleport'] }, 'features[0]'],
    ['a rate limit of 0', { rateLimit: { burst: 0 } }, 'rateLimit.burst'],
    ['a rate limit as a list', { rateLimit: [1, 2] }, 'rateLimit'],
    ['an http:// webhook', { webhook: 'http://hooks.example.com/x' }, 'webhook'],
    ['a null webhook', { webhook: null }, 'webhook'],
    ['the secret', { secret: 'my-own-secret-0000000000' }, 'secret'],
  ];
  it.each(refused)('refuses %s: 400 bad_request naming the field, and changes nothing', async (_what, body, field) => {
    const key = server.app.key;
    const before = (await dash('GET', appPath(key))).json.app;
    const message = expectError(await dash('PATCH', appPath(key), { body }), 400, 'bad_request');
    expect(message).toContain(field);
    expect((await dash('GET', appPath(key))).json.app).toEqual(before);
    expect(await secretOf(key)).toBe(server.app.secret);
  });

  it('refuses a change with several fields when one is broken, and makes none of them', async () => {
    const key = server.app.key;
    const before = (await dash('GET', appPath(key))).json.app;
    const answer = await dash('PATCH', appPath(key), { body: { name: 'Renamed', rateLimit: { perSecond: -1 } } });
    expect(expectError(answer, 400, 'bad_request')).toContain('rateLimit.perSecond');
    expect((await dash('GET', appPath(key))).json.app).toEqual(before);
  });

  it('answers 404 no_app for an unknown key', async () => {
    expectError(await dash('PATCH', appPath('ghost'), { body: { name: 'x' } }), 404, 'no_app');
    expectError(await dash('PATCH', appPath('ghost'), { body: { webhook: '' } }), 404, 'no_app');
    expect((await dash('GET', appPath('ghost'))).status).toBe(404);
  });
});

describe('the secret', () => {
  it('is revealed on demand; a rotation makes a new one: the old one stops working on the API at once, the new one works', async () => {
    const app = await create({ name: 'Rotate' });
    const key = app.key as string;
    const old = await secretOf(key);
    expect((await apiAs({ key, secret: old })).status).toBe(200);

    const rotated = await dash('POST', `${appPath(key)}/secret`);
    expect(rotated.status, rotated.text).toBe(200);
    expect(Object.keys(rotated.json).sort()).toEqual(['ok', 'secret']);
    const secret = rotated.json.secret as string;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secret).not.toBe(old);
    expect(await secretOf(key)).toBe(secret);

    expectError(await apiAs({ key, secret: old }), 401, 'bad_signature');
    expect((await apiAs({ key, secret })).status).toBe(200);
    const sdk = new Realtime({ url: server.url, key, secret });
    try {
      expect(await sdk.online(['alice'])).toEqual([]);
    } finally {
      await sdk.close();
    }
    // The rest of the app is as it was.
    expect((await dash('GET', appPath(key))).json.app).toEqual(app);
  });

  it('answers 404 no_app for an unknown key, and a rotation makes no app', async () => {
    expectError(await dash('GET', `${appPath('ghost')}/secret`), 404, 'no_app');
    expectError(await dash('POST', `${appPath('ghost')}/secret`), 404, 'no_app');
    expectError(await dash('GET', appPath('ghost')), 404, 'no_app');
  });
});

describe('deleting an app', () => {
  const pages: RawPage[] = [];
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
  });

  it('removes it: the API refuses its key, a GET answers no_app, a second delete too; other apps stay', async () => {
    const app = await create({ name: 'Doomed' });
    const key = app.key as string;
    const secret = await secretOf(key);
    expect((await apiAs({ key, secret })).status).toBe(200);
    const gone = await dash('DELETE', appPath(key));
    expect(gone.status, gone.text).toBe(200);
    expect(gone.json).toEqual({ ok: true });
    expectError(await apiAs({ key, secret }), 401, 'unknown_site');
    expectError(await dash('GET', appPath(key)), 404, 'no_app');
    expectError(await dash('GET', `${appPath(key)}/secret`), 404, 'no_app');
    expectError(await dash('DELETE', appPath(key)), 404, 'no_app');
    expect(((await dash('GET', APPS)).json.apps as { key: string }[]).map((a) => a.key)).not.toContain(key);
    expect((await apiAs(server.app)).status).toBe(200);
    // The key is free again: a new app with it has a new secret.
    await create({ name: 'Reborn', key });
    expect(await secretOf(key)).not.toBe(secret);
  });

  it('closes its open pages with 4001 at their next join or send', async () => {
    const app = await create({ name: 'Pages' });
    const key = app.key as string;
    const sdk = new Realtime({ url: server.url, key, secret: await secretOf(key) });
    try {
      const joining = await helloPage(server.url, key);
      const sending = await helloPage(server.url, key);
      pages.push(joining, sending);
      sending.send({ t: 'join', ref: 1, room: 'r', token: await sdk.roomToken('r', { send: ['*'] }) });
      await sending.next((f) => f.t === 'joined');
      const token = await sdk.roomToken('other');

      expect((await dash('DELETE', appPath(key))).status).toBe(200);
      joining.send({ t: 'join', ref: 2, room: 'other', token });
      expect(await joining.closed).toMatchObject({ code: CLOSE.unknownSite });
      sending.send({ t: 'send', ref: 3, room: 'r', event: 'e', data: 1 });
      expect(await sending.closed).toMatchObject({ code: CLOSE.unknownSite });
      expect(CLOSE.unknownSite).toBe(4001);
    } finally {
      await sdk.close();
    }
  });
});

describe('what a deleted app leaves behind', () => {
  const pages: RawPage[] = [];
  let receiver: Receiver | undefined;
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await receiver?.close();
  });

  const hooks = (key: string) => `${appPath(key)}/webhooks`;
  /** Every try of the last minutes the dashboard counts for the app. */
  async function tries(key: string): Promise<number> {
    const { minutes } = (await dash('GET', `${hooks(key)}/tries?minutes=5`, {}, lax)).json as unknown as {
      minutes: { outcomes: Record<string, number> }[];
    };
    return minutes.flatMap((m) => Object.values(m.outcomes)).reduce((sum, n) => sum + n, 0);
  }

  it('nothing: its history, webhook batches and tries are gone, and its live consoles end with an app_deleted event', async () => {
    const key = freshKey('leftovers');
    await create({ name: 'Leftovers', key }, lax);
    const secret = await secretOf(key, lax);
    receiver = await startReceiver({ key, secret });
    receiver.mode = 'fail';
    expect((await dash('PATCH', appPath(key), { body: { webhook: receiver.url } }, lax)).status).toBe(200);
    const sdk = new Realtime({ url: lax.url, key, secret });
    try {
      // A kept event, a failed webhook batch with its try, and a live console.
      await sdk.emit({ rooms: ['kept'], event: 'old', data: 1, history: { kept: [100, 24] } });
      expect((await dash('POST', `${hooks(key)}/test`, {}, lax)).json).toMatchObject({ delivered: false });
      expect((await dash('GET', hooks(key), {}, lax)).json.deliveries).toHaveLength(1);
      expect(await tries(key)).toBe(1);
      const console = await openConsole(lax, key, laxSession.cookie);
      expect(console.status).toBe(200);

      expect((await dash('DELETE', appPath(key), {}, lax)).status).toBe(200);

      // The console is told why it ends, then ends.
      await console.until(() => console.named.some((n) => n.event === 'end'), 'the end event');
      expect(console.named).toEqual([{ event: 'end', data: { reason: 'app_deleted', message: expect.any(String) } }]);
      await console.until(() => console.ended, 'the stream to end');

      // An app made again with the key finds nothing of the old one.
      await create({ name: 'Leftovers again', key, webhook: receiver.url }, lax);
      expect((await dash('GET', hooks(key), {}, lax)).json.deliveries).toEqual([]);
      expect(await tries(key)).toBe(0);
      const again = new Realtime({ url: lax.url, key, secret: await secretOf(key, lax) });
      try {
        const page = await helloPage(lax.url, key);
        pages.push(page);
        page.send({ t: 'join', ref: 1, room: 'kept', token: await again.roomToken('kept'), last: 100 });
        await page.next((f) => f.t === 'joined' && f.ref === 1, 'joined');
        await again.emit({ rooms: ['kept'], event: 'new', data: 2 });
        await page.next(isEvent('new', 'kept'), 'the live event');
        expect(page.frames.filter(isEvent('old', 'kept'))).toEqual([]);
      } finally {
        await again.close();
      }
    } finally {
      await sdk.close();
    }
  });
});

describe('CSRF on every change', () => {
  it('refuses each change without the X-CSRF-Token, with another token, or from another origin: 403 bad_csrf, nothing changed', async () => {
    const key = freshKey('csrf');
    await create({ name: 'Guarded', key });
    const secret = await secretOf(key);
    const changes: [string, string, unknown][] = [
      ['POST', APPS, { name: 'Sneaky', key: freshKey('sneaky') }],
      ['PATCH', appPath(key), { name: 'Sneaky' }],
      ['DELETE', appPath(key), undefined],
      ['POST', `${appPath(key)}/secret`, undefined],
    ];
    const wrong: Ask[] = [
      { noCsrf: true },
      { noCsrf: true, origin: server.url },
      { origin: 'http://evil.example' },
      { origin: 'null' },
    ];
    const before = (await dash('GET', APPS)).json.apps;
    for (const [method, path, body] of changes) {
      for (const ask of wrong) {
        const answer = await dash(method, path, { ...ask, ...(body === undefined ? {} : { body }) });
        expectError(answer, 403, 'bad_csrf');
      }
      // Another session's token is not this one's.
      const other = await signIn(server);
      if (other.csrf !== session.csrf) {
        const mixed = { cookie: session.cookie, csrf: other.csrf };
        expectError(await dash(method, path, body === undefined ? {} : { body }, server, mixed), 403, 'bad_csrf');
      }
    }
    expect((await dash('GET', APPS)).json.apps).toEqual(before);
    expect(await secretOf(key)).toBe(secret);
    // With the token and this very origin, a change goes through.
    const renamed = await dash('PATCH', appPath(key), { body: { name: 'Renamed' }, origin: server.url });
    expect(renamed.status, renamed.text).toBe(200);
  });
});

describe('on two nodes of one Redis', () => {
  let redis: TestRedis;
  let a: TestServer;
  let b: TestServer;
  let sessionA: Session;
  let sessionB: Session;
  beforeAll(async () => {
    redis = await startRedis();
    const engine = { kind: 'redis' as const, url: redis.url, prefix: uniquePrefix('dashboard-apps') };
    const app = newApp({ name: 'cluster' });
    const [first, second] = await Promise.all(
      [0, 1].map(() => startTestServer({ dashboard: { passwordHash: hash }, engine, app })),
    );
    if (!first || !second) throw new Error('two nodes were started');
    [a, b] = [first, second];
    // One after the other: the nodes check one sign-in of an address at a time, over the cluster.
    sessionA = await signIn(a as TestServer);
    sessionB = await signIn(b as TestServer);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.close();
  });

  /** Resolves once `check` passes, failing if it never does within the nodes' one-second app cache (and slack). */
  const soon = (check: () => Promise<void>) => untilItWorks(check, 5_000);

  it('a rotation, a plan change and a deletion on one node reach the other within its second of cache; its dashboard sees them at once, its consoles of the app end', async () => {
    const created = await dash('POST', APPS, { body: { name: 'Shared' } }, a, sessionA);
    expect(created.status, created.text).toBe(201);
    const key = (created.json.app as { key: string }).key;
    const onB = (secret: string) => send({ url: b.url, app: newApp({ key, secret }) }, { path: `${API}/online?ids=x` });
    const old = (await dash('GET', `${appPath(key)}/secret`, {}, b, sessionB)).json.secret as string;
    expect((await onB(old)).status).toBe(200);

    const secret = (await dash('POST', `${appPath(key)}/secret`, {}, a, sessionA)).json.secret as string;
    // The other node's dashboard reads the store, not its cache.
    expect((await dash('GET', `${appPath(key)}/secret`, {}, b, sessionB)).json.secret).toBe(secret);
    await soon(async () => expect((await onB(old)).json.error).toBe('bad_signature'));
    expect((await onB(secret)).status).toBe(200);

    expect((await dash('PATCH', appPath(key), { body: { features: ['ask'] } }, a, sessionA)).status).toBe(200);
    expect((await dash('GET', appPath(key), {}, b, sessionB)).json.app).toMatchObject({ features: ['ask'] });
    await soon(async () => expect((await onB(secret)).json.error).toBe('not_included'));

    const console = await openConsole(b, key, sessionB.cookie);
    expect(console.status).toBe(200);
    expect((await dash('DELETE', appPath(key), {}, a, sessionA)).status).toBe(200);
    expectError(await dash('GET', appPath(key), {}, b, sessionB), 404, 'no_app');
    await soon(async () => expect((await onB(secret)).json.error).toBe('unknown_site'));
    // The other node's console of the app is ended too, saying why.
    await console.until(() => console.ended, 'the console on the other node to end');
    expect(console.named).toEqual([{ event: 'end', data: { reason: 'app_deleted', message: expect.any(String) } }]);
  });
});
