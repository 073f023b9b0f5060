import { Realtime } from '@realtime/node';
import { hashDashboardPassword, newApp } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardSession, dashboardAsk, dashboardSignIn, expectRefusal } from './dashboard-client.js';
import { waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';
import { type Receiver, startReceiver } from './receiver.js';

/**
 * The dashboard's stats over raw HTTP (docs/dashboard.md, "Stats"): samples taken on a short interval
 * (the server's `dashboard.statsIntervalMs`, so no test waits 5 s) grow into a ring of 120, and count
 * what really happened: pages open, events emitted and handed to pages, webhook tries and backlog.
 */

const PASSWORD = 'correct horse battery staple';
const INTERVAL_MS = 20;
const STATS = '/dashboard/api/stats';

interface Sample {
  at: number;
  pages: number;
  messagesIn: number;
  messagesOut: number;
  deliveries: number;
  webhookBacklog: number | null;
  webhookWaiting: number | null;
}

let server: TestServer;
let session: DashboardSession;
let receiver: Receiver;
const app = newApp({ name: 'stats', rateLimit: { perSecond: 100_000, burst: 100_000 } });
const pages: RawPage[] = [];

beforeAll(async () => {
  receiver = await startReceiver(app);
  // Every batch fails and waits a minute for its retry: it stays in the backlog while the tests run.
  receiver.mode = 'fail';
  server = await startTestServer({
    app: { ...app, webhook: receiver.url },
    dashboard: { passwordHash: await hashDashboardPassword(PASSWORD), statsIntervalMs: INTERVAL_MS },
    allowPrivateWebhooks: true,
    webhooks: { windowMs: 50, retryDelaysMs: [60_000], answerMs: 1000 },
  });
  session = await dashboardSignIn(server, PASSWORD);
});

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await server?.close();
  await receiver?.close();
});

async function stats(): Promise<{ interval: number; node: string; scope: Record<string, string>; samples: Sample[] }> {
  const answer = await dashboardAsk(server, STATS, session);
  expect(answer.status, answer.text).toBe(200);
  expect(answer.headers['cache-control']).toBe('no-store');
  const { ok, ...body } = answer.json;
  expect(ok).toBe(true);
  return body as unknown as Awaited<ReturnType<typeof stats>>;
}

/** Reads the stats until a sample passes `test`; answers it. */
async function sampleWhere(test: (sample: Sample) => boolean, what: string): Promise<Sample> {
  let found: Sample | undefined;
  await waitFor(
    async () => {
      found = (await stats()).samples.find(test);
      return found !== undefined;
    },
    what,
    15_000,
  );
  return found as Sample;
}

describe('dashboard: stats', () => {
  it('answers its interval, node and the scope of each series, with samples that grow', async () => {
    let first = await stats();
    await waitFor(
      async () => {
        first = await stats();
        return first.samples.length >= 2;
      },
      'two samples',
      15_000,
    );
    expect(first.interval).toBe(INTERVAL_MS);
    expect(first.node).toEqual(expect.any(String));
    expect(first.node).not.toBe('');
    expect(first.scope).toEqual({
      pages: 'node',
      messagesIn: 'node',
      messagesOut: 'node',
      deliveries: 'node',
      webhookBacklog: 'cluster',
      webhookWaiting: 'cluster',
    });
    for (const sample of first.samples) {
      expect(sample).toEqual({
        at: expect.any(Number),
        pages: expect.any(Number),
        messagesIn: expect.any(Number),
        messagesOut: expect.any(Number),
        deliveries: expect.any(Number),
        webhookBacklog: expect.any(Number),
        webhookWaiting: expect.any(Number),
      });
    }
    const ats = first.samples.map((s) => s.at);
    expect(ats).toEqual([...ats].sort((a, b) => a - b));
    const lastAt = ats.at(-1) as number;
    await waitFor(async () => ((await stats()).samples.at(-1)?.at ?? 0) > lastAt, 'a newer sample', 15_000);
  });

  it('counts an open page, emitted events handed to it, and webhook tries that fail into the backlog', async () => {
    const sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
    // A user's page: `user.online` and `room.occupied` go to the (failing) webhook.
    const page = await helloPage(server.url, app.key, await sdk.identityToken('alice'));
    pages.push(page);
    page.send({ t: 'join', ref: 1, room: 'ticker', token: await sdk.roomToken('ticker') });
    await page.next((f) => f.ref === 1 && f.t === 'joined', 'joined ticker');

    await sampleWhere((s) => s.pages >= 1, 'a sample with the page open');
    for (let n = 0; n < 30; n++) await sdk.emit({ rooms: ['ticker'], event: 'tick', data: n });
    await page.next((f) => isEvent('tick', 'ticker')(f) && f.data === 29, 'the last tick');
    const busy = await sampleWhere((s) => s.messagesIn > 0 && s.messagesOut > 0, 'a sample with the ticks');
    expect(busy.pages).toBeGreaterThanOrEqual(1);

    await receiver.waitFor(() => receiver.requests > 0, 'a webhook try');
    await sampleWhere((s) => s.deliveries > 0, 'a sample with the webhook try');
    await sampleWhere((s) => (s.webhookBacklog ?? 0) >= 1, 'a sample with the failed batch in the backlog');

    // Once the page is gone, later samples count no page.
    await page.close();
    await waitFor(() => server.pages() === 0, 'the service to drop the page');
    const closedAt = (await stats()).samples.at(-1)?.at ?? 0;
    await sampleWhere((s) => s.at > closedAt && s.pages === 0, 'a sample after the page closed');
    await sdk.close();
  });

  it('keeps the last 120 samples, dropping the oldest', async () => {
    /** Reads the stats until `test` holds; answers the last read. */
    const until = async (test: (samples: Sample[]) => boolean, what: string) => {
      let samples: Sample[] = [];
      await waitFor(
        async () => {
          samples = (await stats()).samples;
          return test(samples);
        },
        what,
        30_000,
      );
      return samples;
    };
    const full = await until((samples) => samples.length === 120, '120 samples');
    const oldest = full[0]?.at ?? 0;
    const later = await until((samples) => (samples[0]?.at ?? 0) > oldest, 'the oldest to go');
    expect(later).toHaveLength(120);
  });

  it('refuses without a session, and other methods', async () => {
    expectRefusal(await dashboardAsk(server, STATS), 401, 'signed_out');
    const post = await dashboardAsk(server, STATS, session, 'POST');
    expectRefusal(post, 405, 'bad_method');
    expect(post.headers.allow).toBe('GET');
  });
});
