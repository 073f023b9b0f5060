import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, fetchPlain, post, send, startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';
import { type Receiver, startReceiver } from './receiver.js';

/** The value of one sample line of a Prometheus text answer; 0 when the series is not there yet. */
function sample(text: string, series: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return 0;
}

describe('health and readiness', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ shutdownDelayMs: 1500 });
  });
  afterAll(async () => {
    await server.close();
  });

  it('health answers 200 with a tiny body and no app data, unsigned; HEAD has no body; POST is 405', async () => {
    const health = await fetchPlain(server.url, `${API}/health`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ ok: true });
    const head = await fetchPlain(server.url, `${API}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    const wrong = await fetchPlain(server.url, `${API}/health`, { method: 'POST' });
    expect(wrong.status).toBe(405);
    expect(JSON.parse(wrong.text)).toMatchObject({ ok: false, error: 'bad_method' });
    expect(wrong.headers.allow).toBe('GET, HEAD');
  });

  it('ready answers 200 while the stores answer, then 503 unavailable once a stop began, while health stays 200', async () => {
    const ready = await fetchPlain(server.url, `${API}/ready`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ ok: true });

    const stopping = server.close();
    const during = await fetchPlain(server.url, `${API}/ready`);
    expect(during.status).toBe(503);
    expect(JSON.parse(during.text)).toMatchObject({
      ok: false,
      error: 'unavailable',
      message: 'the service is stopping',
    });
    const alive = await fetchPlain(server.url, `${API}/health`);
    expect(alive.status).toBe(200);
    await stopping;
  });
});

describe('Prometheus metrics', () => {
  let server: TestServer;
  let sdk: Realtime;
  let receiver: Receiver;
  const pages: RawPage[] = [];
  const token = 'scrape-token-0123456789';
  const scrape = async () => {
    const answer = await fetchPlain(server.url, '/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect(answer.status).toBe(200);
    return answer.text;
  };

  beforeAll(async () => {
    receiver = await startReceiver({ key: 'metrics-app', secret: 'metrics-secret-0123456789' });
    server = await startTestServer({
      metricsToken: token,
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 50 },
      app: { key: 'metrics-app', secret: 'metrics-secret-0123456789', webhook: receiver.url },
    });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
    await receiver.close();
  });

  it('asks for the bearer token when one is configured: 401 without it or with a wrong one', async () => {
    const none = await fetchPlain(server.url, '/metrics');
    expect(none.status).toBe(401);
    expect(JSON.parse(none.text)).toMatchObject({ ok: false, error: 'unauthorized' });
    expect(none.headers['www-authenticate']).toBe('Bearer');
    const wrong = await fetchPlain(server.url, '/metrics', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const text = await scrape();
    expect(text).toContain('# TYPE realtime_pages_open gauge');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('pages, rooms, emits, deliveries, bytes, history appends and API requests move when they happen', async () => {
    const before = await scrape();
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken('alice'));
    pages.push(page);
    page.send({ t: 'join', ref: 1, room: 'lobby', token: await sdk.roomToken('lobby', { userId: 'alice' }) });
    await page.next((f) => f.t === 'joined', 'joined');
    const answer = await post(server, `${API}/emit`, {
      rooms: ['lobby'],
      event: 'hello',
      data: { n: 1 },
      history: { lobby: [10, 1] },
    });
    expect(answer.status).toBe(200);
    await page.next(isEvent('hello', 'lobby'), 'the event');
    const after = await scrape();

    expect(sample(after, 'realtime_pages_open')).toBe(sample(before, 'realtime_pages_open') + 1);
    expect(sample(after, 'realtime_rooms_joined')).toBe(sample(before, 'realtime_rooms_joined') + 1);
    const emits = 'realtime_emits_total{target="room",source="api"}';
    expect(sample(after, emits)).toBe(sample(before, emits) + 1);
    const appends = 'realtime_history_appends_total{result="ok"}';
    expect(sample(after, appends)).toBe(sample(before, appends) + 1);
    expect(sample(after, 'realtime_history_append_duration_seconds_count')).toBe(
      sample(before, 'realtime_history_append_duration_seconds_count') + 1,
    );
    // welcome, joined and the event at least.
    expect(sample(after, 'realtime_deliveries_total')).toBeGreaterThanOrEqual(
      sample(before, 'realtime_deliveries_total') + 3,
    );
    expect(sample(after, 'realtime_bytes_out_total')).toBeGreaterThan(sample(before, 'realtime_bytes_out_total'));
    const emitted = 'realtime_api_requests_total{route="emit",status="200"}';
    expect(sample(after, emitted)).toBe(sample(before, emitted) + 1);
  });

  it('labels never carry room or user names, whatever the traffic', async () => {
    await post(server, `${API}/emit`, { rooms: ['secret-room-name'], users: ['secret-user-id'], event: 'x' });
    await send(server, { path: `${API}/users/secret-user-id/ask`, body: JSON.stringify({ event: 'q', timeout: 1 }) });
    await send(server, { path: `${API}/no/such/secret-path` });
    const text = await scrape();
    expect(text).not.toContain('secret-room-name');
    expect(text).not.toContain('secret-user-id');
    expect(text).not.toContain('secret-path');
    expect(sample(text, 'realtime_api_requests_total{route="none",status="404"}')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'realtime_ask_duration_seconds_count')).toBeGreaterThanOrEqual(1);
  });

  it('webhook tries by status, batches by state, events waiting and the oldest wait', async () => {
    const before = await scrape();
    const tries = 'realtime_webhook_tries_total{status="204",error="none"}';
    const answer = await post(server, `${API}/webhooks/test`, {});
    expect(answer.status).toBe(200);
    await receiver.waitFor(() => receiver.events('webhook.test').length >= 1, 'the test event');
    const deadline = Date.now() + 5000;
    let after = await scrape();
    while (sample(after, tries) < sample(before, tries) + 1 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      after = await scrape();
    }
    // Batches of the earlier tests' events (room.occupied, user.online...) may be tried in the same while.
    expect(sample(after, tries)).toBeGreaterThanOrEqual(sample(before, tries) + 1);
    expect(sample(after, 'realtime_webhook_batches{state="taken"}')).toBeGreaterThanOrEqual(1);
    expect(after).toMatch(/^realtime_webhook_events_waiting \d+$/m);
    expect(after).toMatch(/^realtime_webhook_oldest_waiting_seconds [\d.e-]+$/m);
  });

  it('counts asks refused for too many in flight apart from the app rate', async () => {
    const busy = await startTestServer({ limits: { maxAsksPerUser: 1 } });
    const busySdk = new Realtime({ url: busy.url, key: busy.app.key, secret: busy.app.secret });
    try {
      const page = await helloPage(busy.url, busy.app.key, await busySdk.identityToken('bob'));
      pages.push(page);
      const path = `${API}/users/bob/ask`;
      const waiting = send(busy, { path, body: JSON.stringify({ event: 'q', timeout: 1000 }) });
      await page.next((f) => f.t === 'ask', 'the first ask');
      const refused = await send(busy, { path, body: JSON.stringify({ event: 'q', timeout: 1000 }) });
      expect(refused.status).toBe(429);
      await waiting;
      const text = (await fetchPlain(busy.url, '/metrics')).text;
      expect(sample(text, 'realtime_rate_limited_total{scope="asks"}')).toBe(1);
      expect(sample(text, 'realtime_rate_limited_total{scope="api"}')).toBe(0);
      expect(sample(text, 'realtime_api_requests_total{route="ask",status="429"}')).toBe(1);
    } finally {
      await busySdk.close();
      await busy.close();
    }
  });

  it('counts API and page-frame rate-limit refusals', async () => {
    const limited = await startTestServer({
      app: { rateLimit: { perSecond: 1, burst: 1 } },
      gateway: { framesPerSecond: 1, frameBurst: 2 },
    });
    try {
      await post(limited, `${API}/emit`, { rooms: ['a'], event: 'x' });
      const refused = await post(limited, `${API}/emit`, { rooms: ['a'], event: 'x' });
      expect(refused.status).toBe(429);
      const page = await helloPage(limited.url, limited.app.key);
      pages.push(page);
      page.send({ t: 'leave', ref: 1, room: 'a' });
      page.send({ t: 'leave', ref: 2, room: 'a' });
      await page.next((f) => f.t === 'error' && f.code === 'rate_limited', 'a rate_limited error frame');
      const text = (await fetchPlain(limited.url, '/metrics')).text;
      expect(sample(text, 'realtime_rate_limited_total{scope="api"}')).toBe(1);
      expect(sample(text, 'realtime_rate_limited_total{scope="frames"}')).toBeGreaterThanOrEqual(1);
    } finally {
      await limited.close();
    }
  });
});
