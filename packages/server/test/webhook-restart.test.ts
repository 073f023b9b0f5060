import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Realtime } from '@realtime/node';
import { CLOSE } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp, type RunningServer, startServer } from '../src/index.js';
import { testEngine } from './helpers.js';
import { helloPage } from './pages.js';
import { type Receiver, startReceiver } from './receiver.js';

describe('user.offline across a graceful restart', () => {
  const app = newApp({ name: 'restart' });
  let receiver: Receiver;
  let dataDir: string;
  beforeAll(async () => {
    receiver = await startReceiver(app);
    app.webhook = receiver.url;
    dataDir = mkdtempSync(join(tmpdir(), 'realtime-restart-'));
  });
  afterAll(async () => {
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const start = async (port = 0) =>
    startServer({
      host: '127.0.0.1',
      port,
      dataDir,
      apps: [app],
      logLevel: 'silent',
      allowPrivateWebhooks: true,
      offlineDelayMs: 1500,
      webhooks: { windowMs: 50 },
      engine: await testEngine(dataDir),
    });

  async function connectAs(server: RunningServer, user: string) {
    const sdk = new Realtime({ url: server.url, key: app.key, secret: app.secret });
    const page = await helloPage(server.url, app.key, await sdk.identityToken(user));
    await sdk.close();
    return page;
  }

  const count = (type: string, user: string) => receiver.events(type).filter((e) => e.user === user).length;

  it('a page back within the delay after a restart: no user.offline, no second user.online', async () => {
    const first = await start();
    const page = await connectAs(first, 'zed');
    await receiver.waitFor(() => count('user.online', 'zed') === 1, 'user.online');
    const closing = page.closed;
    await first.close();
    expect((await closing).code).toBe(CLOSE.shutdown);
    const second = await start();
    const back = await connectAs(second, 'zed');
    // Past the delay counted from the shutdown, with the page back: still nothing. A user who came
    // and went after the restart falls offline later than zed would have; once that is reported (and
    // then a later user.online), zed's would have come before.
    await connectAs(second, 'passer-by').then((p) => p.close());
    await receiver.waitFor(() => count('user.offline', 'passer-by') === 1, "the passer-by's user.offline");
    await connectAs(second, 'marker').then((p) => p.close());
    await receiver.waitFor(() => count('user.online', 'marker') === 1, 'the marker');
    expect(count('user.offline', 'zed')).toBe(0);
    expect(count('user.online', 'zed')).toBe(1);
    await back.close();
    await second.close();
  });

  it('no page back: user.offline goes out when it was due, from the next run', async () => {
    const first = await start();
    await connectAs(first, 'yan');
    await receiver.waitFor(() => count('user.online', 'yan') === 1, 'user.online');
    const stoppedAt = Date.now();
    await first.close();
    const second = await start();
    // Still online for GET /online until the report is due, after the restart too.
    const sdk = new Realtime({ url: second.url, key: app.key, secret: app.secret });
    expect(await sdk.online(['yan'])).toEqual(['yan']);
    await sdk.close();
    await receiver.waitFor(() => count('user.offline', 'yan') === 1, 'user.offline from the second run', 8000);
    const offline = receiver.events('user.offline').find((e) => e.user === 'yan');
    expect((offline?.at as number) - stoppedAt).toBeGreaterThanOrEqual(1400);
    await second.close();
  });
});
