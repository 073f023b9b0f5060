/**
 * What the SDK suites share: a page server whose `/` loads the SDK bundle as `window.RT`, pages of
 * it, and a round trip through a page's client. Chromium itself comes from ./chromium.ts.
 */
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { servePages } from './chromium.js';

const BUNDLE = new URL('../../packages/browser/dist/realtime.browser.js', import.meta.url);

/** Serves test pages from http://127.0.0.1:<port>/: `/` loads the SDK bundle as `window.RT`. */
export function startPageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const html =
    '<!doctype html><meta charset="utf-8"><title>t</title><script type="module">' +
    "import * as RT from '/realtime.browser.js'; window.RT = RT; window.ready = true;</script>";
  return servePages(async (path) => {
    if (path === '/realtime.browser.js') return { type: 'text/javascript', body: await readFile(BUNDLE) };
    if (path === '/' || path.startsWith('/?')) return { type: 'text/html', body: html };
    return undefined;
  });
}

let roundTrips = 0;

/**
 * A round trip on the page's socket (its `window.client` joins a room of its own): what the service
 * answered to every frame the page sent before has come by then. `token` mints a room token.
 */
export async function roundTrip(page: Page, token: (room: string) => Promise<string>): Promise<void> {
  const room = `round-trip-${++roundTrips}`;
  const roomToken = await token(room);
  await page.evaluate(
    async ({ room, roomToken }) => {
      const { client } = window as unknown as { client: import('@realtime/browser').RealtimeClient };
      await client.join(room, { token: roomToken }).joined;
    },
    { room, roomToken },
  );
}

/** A new page with the SDK loaded. */
export async function openSdkPage(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(url);
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
  return page;
}
