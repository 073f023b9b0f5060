import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';

const BUNDLE = new URL('../../packages/browser/dist/realtime.browser.js', import.meta.url);

/**
 * Flags for calls: fake camera and microphone granted without a prompt, media playing without a
 * gesture, ICE on loopback, and host candidates with their real addresses (no mDNS multicast).
 */
export const MEDIA_FLAGS = [
  '--use-fake-ui-for-media-stream',
  '--use-fake-device-for-media-stream',
  '--autoplay-policy=no-user-gesture-required',
  '--allow-loopback-in-peer-connection',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
];

/**
 * Chromium, headless, with no network of its own beyond loopback: the one at CHROMIUM_PATH when
 * set (any machine), else Debian's (scripts/test-deps.sh installs it). `extraArgs`: e.g. {@link MEDIA_FLAGS}.
 */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      ...extraArgs,
    ],
  });
}

/**
 * Serves test pages from http://127.0.0.1:<port> (Chromium keeps data: and about:blank pages off
 * localhost): `/` loads the SDK bundle as `window.RT`.
 */
export async function startPageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const html =
    '<!doctype html><meta charset="utf-8"><title>t</title><script type="module">' +
    "import * as RT from '/realtime.browser.js'; window.RT = RT; window.ready = true;</script>";
  const server = createServer(async (req, res) => {
    if (req.url === '/realtime.browser.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(await readFile(BUNDLE));
    } else if (req.url === '/' || req.url?.startsWith('/?')) {
      res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
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
