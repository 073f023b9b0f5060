import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../packages/server/test/helpers.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, startPageServer } from './harness.js';

interface PageWindow {
  RT: typeof import('@realtime/browser');
  client: import('@realtime/browser').RealtimeClient;
  /** State changes with the page's own time, and the delay the SDK said it waits. */
  log: { state: string; at: number; code?: number; retryIn?: number }[];
}

// One page closed by a stopping node at 0.2 reconnects per second: a 5 s window; the draw 0.4 gives 2 s.
const GATEWAY = { reconnect: { ratePerSecond: 0.2 }, random: () => 0.4 };
const HINT_MS = 2000;

describe('the browser SDK honours the reconnect hint of a restarting service', () => {
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  let page: Page | undefined;
  let first: TestServer | undefined;
  let second: TestServer | undefined;

  beforeAll(async () => {
    pages = await startPageServer();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await page?.close();
    await closeChromium(browser);
    await pages?.close();
    await first?.close();
    await second?.close();
  });

  it('reconnects after the hinted delay, not its own first backoff step (at most 500 ms)', async () => {
    first = await startTestServer({ gateway: GATEWAY });
    const port = Number(new URL(first.url).port);
    const app = first.app;
    page = await openSdkPage(browser, pages.url);
    await page.evaluate(
      ({ url, site }) => {
        const w = window as unknown as PageWindow;
        w.log = [];
        w.client = w.RT.connect({ url, site });
        w.client.on('$state', (change) =>
          w.log.push({ state: change.state, at: performance.now(), code: change.code, retryIn: change.retryIn }),
        );
      },
      { url: first.url, site: app.key },
    );
    await page.waitForFunction(() => (window as unknown as PageWindow).client.state === 'connected');

    const stopping = first;
    first = undefined;
    await stopping.close();
    second = await startTestServer({ port, app });
    await page.waitForFunction(
      () => (window as unknown as PageWindow).log.filter((e) => e.state === 'connected').length === 2,
      undefined,
      { timeout: 15_000 },
    );
    const log = await page.evaluate(() => (window as unknown as PageWindow).log);
    const lost = log.find((e) => e.state === 'reconnecting');
    const back = log.findLast((e) => e.state === 'connected');
    expect(lost).toMatchObject({ code: 4100, retryIn: HINT_MS });
    expect((back?.at ?? 0) - (lost?.at ?? 0)).toBeGreaterThanOrEqual(HINT_MS - 50);
  }, 30_000);
});
