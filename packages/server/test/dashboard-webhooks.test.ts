import { hashDashboardPassword, newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RawAnswer, send, startTestServer, type TestServer } from './helpers.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * The dashboard's webhooks over raw HTTP (docs/dashboard.md, "Webhooks"): the address set through
 * the apps API, the test and resend answering as the API's (with the error when nothing answered),
 * the delivery log newest first, a batch's events, and the tries counted by outcome per minute in
 * the store. Receivers and the service are on 127.0.0.1 (the service allows private webhooks).
 */

const PASSWORD = 'webhooks operator';
const OUTCOMES = ['2xx', '3xx', '4xx', '5xx', 'timeout', 'unreachable', 'not_public'];

interface Session {
  cookie: string;
  csrf: string;
}

interface Ask {
  method?: string;
  body?: string;
  /** Leave out the CSRF token (or send this one). */
  csrf?: string | null;
  origin?: string;
  session?: Session | null;
}

let server: TestServer;
let session: Session;
const hooked = newApp({ name: 'hooked' });
const other = newApp({ name: 'other' });
const unplanned = newApp({ name: 'no webhooks', features: ['history', 'presence'] });
let receiver: Receiver;
let otherReceiver: Receiver;

function ask(path: string, a: Ask = {}): Promise<RawAnswer> {
  const s = a.session === undefined ? session : a.session;
  const headers: [string, string][] = [];
  if (s) headers.push(['Cookie', `rt_dashboard=${s.cookie}`]);
  const csrf = a.csrf === undefined ? s?.csrf : a.csrf;
  if (csrf !== null && csrf !== undefined) headers.push(['X-CSRF-Token', csrf]);
  if (a.origin !== undefined) headers.push(['Origin', a.origin]);
  return send(server, {
    method: a.method ?? 'GET',
    path: `/dashboard/api${path}`,
    unsigned: true,
    headers,
    ...(a.body === undefined ? {} : { body: a.body }),
  });
}

const post = (path: string, a: Ask = {}) => ask(path, { method: 'POST', ...a });
const hooks = (key: string) => `/apps/${encodeURIComponent(key)}/webhooks`;

function expectOk(answer: RawAnswer, status = 200): RawAnswer['json'] {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json.ok).toBe(true);
  return answer.json;
}

function expectError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json).toEqual({ ok: false, error: code, message: expect.any(String) });
}

async function setAddress(key: string, webhook: string): Promise<void> {
  expectOk(await ask(`/apps/${key}`, { method: 'PATCH', body: JSON.stringify({ webhook }) }));
}

interface Delivery {
  id: string;
  state: string;
  status: number;
  error?: string;
  events: number;
  attempts: number;
  at: number | null;
  next_at: number | null;
  resendable: boolean;
}

async function deliveries(key: string): Promise<Delivery[]> {
  return expectOk(await ask(hooks(key))).deliveries as Delivery[];
}

/** The tries of the last `minutes`, summed per outcome. */
async function triesSummed(key: string, minutes = 5): Promise<Record<string, number>> {
  const body = expectOk(await ask(`${hooks(key)}/tries?minutes=${minutes}`));
  const rows = body.minutes as { at: number; outcomes: Record<string, number> }[];
  const sum: Record<string, number> = {};
  for (const row of rows) {
    for (const [outcome, n] of Object.entries(row.outcomes)) sum[outcome] = (sum[outcome] ?? 0) + n;
  }
  return sum;
}

const counts = (given: Record<string, number>) => Object.fromEntries(OUTCOMES.map((o) => [o, given[o] ?? 0]));

beforeAll(async () => {
  const hash = await hashDashboardPassword(PASSWORD);
  [receiver, otherReceiver] = await Promise.all([startReceiver(hooked), startReceiver(other)]);
  server = await startTestServer({
    app: hooked,
    apps: [other, unplanned],
    dashboard: { passwordHash: hash },
    allowPrivateWebhooks: true,
    // Failed batches wait a minute for their retry: every try in these tests is one they make.
    webhooks: { windowMs: 150, retryDelaysMs: [60_000], answerMs: 500 },
  });
  const signIn = await send(server, {
    method: 'POST',
    path: '/dashboard/api/session',
    unsigned: true,
    body: JSON.stringify({ password: PASSWORD }),
  });
  expect(signIn.status, signIn.text).toBe(200);
  const cookie = /rt_dashboard=([^;]*)/.exec(String(signIn.headers['set-cookie']))?.[1] ?? '';
  session = { cookie, csrf: signIn.json.csrf as string };
});

afterAll(async () => {
  await server?.close();
  await Promise.all([receiver?.close(), otherReceiver?.close()]);
});

describe('dashboard webhooks', () => {
  it('refuses as the API does before an address is set, and no_app for an unknown key', async () => {
    expectError(await ask(hooks(hooked.key)), 409, 'no_webhook');
    expectError(await post(`${hooks(hooked.key)}/test`), 409, 'no_webhook');
    expectError(await post(`${hooks(unplanned.key)}/test`), 403, 'not_included');
    expectError(await ask(hooks(unplanned.key)), 403, 'not_included');
    for (const path of ['', '/test', '/tries', '/b_1', '/b_1/resend']) {
      const method = path === '/test' || path.endsWith('/resend') ? 'POST' : 'GET';
      expectError(await ask(`${hooks('app-nobody-has')}${path}`, { method }), 404, 'no_app');
    }
    // Nothing tried yet: every minute of the window, every outcome 0.
    const body = expectOk(await ask(`${hooks(hooked.key)}/tries?minutes=3`));
    const rows = body.minutes as { at: number; outcomes: Record<string, number> }[];
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row.outcomes).toEqual(counts({}));
    expect((rows[1]?.at ?? 0) - (rows[0]?.at ?? 0)).toBe(60_000);
    expect((rows[2]?.at ?? 0) % 60_000).toBe(0);
    expect(rows[2]?.at).toBeLessThanOrEqual(Date.now());
  });

  it('sends a test to the address set through the apps API, and says what the receiver answered', async () => {
    await setAddress(hooked.key, receiver.url);
    receiver.mode = 'ok';
    expect(expectOk(await post(`${hooks(hooked.key)}/test`))).toEqual({ ok: true, delivered: true, status: 204 });
    expect(receiver.events('webhook.test')).toHaveLength(1);
    receiver.mode = 'fail';
    // An empty JSON object is a body as good as none.
    expect(expectOk(await post(`${hooks(hooked.key)}/test`, { body: '{}' }))).toEqual({
      ok: true,
      delivered: false,
      status: 500,
    });
  });

  it('lists the deliveries newest first, as the API lists them', async () => {
    const [failed, taken, ...rest] = await deliveries(hooked.key);
    expect(rest).toEqual([]);
    expect(failed).toMatchObject({ state: 'retrying', status: 500, events: 1, attempts: 1, resendable: true });
    expect(failed?.error).toBeUndefined();
    expect(failed?.next_at).toEqual(expect.any(Number));
    expect(taken).toMatchObject({
      state: 'taken',
      status: 204,
      events: 1,
      attempts: 1,
      next_at: null,
      resendable: false,
    });
    expect(taken?.id).toBe(receiver.batches[0]?.id);
    // The same records as the API's own listing.
    const api = await send(server, { method: 'GET', path: '/service/realtime/webhooks' });
    expect(api.json.deliveries).toEqual([failed, taken]);
  });

  it('shows a batch and its events; no_batch for an unknown id or another app’s batch', async () => {
    const [failed, taken] = await deliveries(hooked.key);
    const one = expectOk(await ask(`${hooks(hooked.key)}/${taken?.id}`));
    expect(one.delivery).toEqual(taken);
    expect(one.events).toEqual(receiver.batches[0]?.events);
    expect(one.events).toEqual([{ id: expect.any(String), at: expect.any(Number), type: 'webhook.test' }]);
    expect(expectOk(await ask(`${hooks(hooked.key)}/${failed?.id}`)).delivery).toEqual(failed);

    await setAddress(other.key, otherReceiver.url);
    expectOk(await post(`${hooks(other.key)}/test`));
    const [theirs] = await deliveries(other.key);
    expectError(await ask(`${hooks(hooked.key)}/${theirs?.id}`), 404, 'no_batch');
    expectError(await post(`${hooks(hooked.key)}/${theirs?.id}/resend`), 404, 'no_batch');
    expectError(await ask(`${hooks(hooked.key)}/b_nobody`), 404, 'no_batch');
    expectError(await post(`${hooks(hooked.key)}/b_nobody/resend`), 404, 'no_batch');
  });

  it('refuses a test or resend without the CSRF token, or from another origin, and tries nothing', async () => {
    const [failed] = await deliveries(hooked.key);
    const before = receiver.requests;
    for (const path of ['/test', `/${failed?.id}/resend`]) {
      expectError(await post(`${hooks(hooked.key)}${path}`, { csrf: null }), 403, 'bad_csrf');
      expectError(await post(`${hooks(hooked.key)}${path}`, { csrf: 'not-the-token' }), 403, 'bad_csrf');
      expectError(await post(`${hooks(hooked.key)}${path}`, { origin: 'https://evil.example' }), 403, 'bad_csrf');
      expectError(await post(`${hooks(hooked.key)}${path}`, { session: null }), 401, 'signed_out');
      expectError(await post(`${hooks(hooked.key)}${path}`, { body: '{"now":true}' }), 400, 'bad_request');
    }
    expectError(await ask(hooks(hooked.key), { session: null }), 401, 'signed_out');
    expectError(await ask(`${hooks(hooked.key)}/tries`, { session: null }), 401, 'signed_out');
    expectError(await ask(`${hooks(hooked.key)}/${failed?.id}`, { session: null }), 401, 'signed_out');
    expectError(await ask(`${hooks(hooked.key)}/test`), 405, 'bad_method');
    expect(receiver.requests).toBe(before);
  });

  it('resends a failed batch to a receiver that now takes it; a taken batch is not resendable', async () => {
    const [failed] = await deliveries(hooked.key);
    receiver.mode = 'ok';
    const answer = await post(`${hooks(hooked.key)}/${failed?.id}/resend`);
    expect(expectOk(answer)).toEqual({ ok: true, delivered: true, status: 204 });
    expect(receiver.batches.at(-1)?.id).toBe(failed?.id);
    const [now] = await deliveries(hooked.key);
    expect(now).toMatchObject({ id: failed?.id, state: 'taken', status: 204, attempts: 2, resendable: false });
    expectError(await post(`${hooks(hooked.key)}/${failed?.id}/resend`), 409, 'not_resendable');
  });

  it('says why nothing answered: an address where nobody listens is unreachable', async () => {
    const closed = await startReceiver(hooked);
    const url = closed.url;
    await closed.close();
    await setAddress(hooked.key, url);
    expect(expectOk(await post(`${hooks(hooked.key)}/test`))).toEqual({
      ok: true,
      delivered: false,
      status: 0,
      error: 'unreachable',
    });
    const [last] = await deliveries(hooked.key);
    expect(last).toMatchObject({ state: 'retrying', status: 0, error: 'unreachable' });
    await setAddress(hooked.key, receiver.url);
  });

  it('counts every try by outcome, per app, per minute', async () => {
    // Tests: 204, 500, unreachable; the resend: 204. The other app: one test, 204.
    expect(await triesSummed(hooked.key)).toEqual(counts({ '2xx': 2, '5xx': 1, unreachable: 1 }));
    expect(await triesSummed(other.key, 1440)).toEqual(counts({ '2xx': 1 }));
    const body = expectOk(await ask(`${hooks(hooked.key)}/tries`));
    expect(body.minutes).toHaveLength(60);
    for (const bad of ['0', '1441', 'x', '1.5', '-1']) {
      expectError(await ask(`${hooks(hooked.key)}/tries?minutes=${bad}`), 400, 'bad_request');
    }
  });
});
