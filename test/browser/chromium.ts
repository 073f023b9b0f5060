/**
 * The one Chromium setup of the browser tests: which Chromium, with which flags, how pages are
 * served to it, and how it is closed. Every harness and suite launches it here.
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserServer, chromium } from 'playwright-core';

/** Headless, no sandbox (root in CI), no GPU, and no network of its own: no updates, sync or QUIC. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/**
 * For calls and streams: fake camera and microphone granted without a prompt, media playing without
 * a gesture, ICE on loopback, and host candidates with their real addresses (no mDNS multicast).
 */
export const MEDIA_FLAGS = [
  '--use-fake-ui-for-media-stream',
  '--use-fake-device-for-media-stream',
  '--autoplay-policy=no-user-gesture-required',
  '--allow-loopback-in-peer-connection',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
];

/** Where Debian's chromium lives (scripts/test-deps.sh installs it). */
const DEBIAN_CHROMIUM = ['/usr/bin/chromium', '/usr/lib/chromium/chromium'];

/** The Chromium to run: CHROMIUM_PATH when set (any machine), else Debian's. */
export function chromiumPath(): string {
  const given = process.env.CHROMIUM_PATH;
  if (given) return given;
  const found = DEBIAN_CHROMIUM.find((path) => existsSync(path));
  if (!found) {
    throw new Error(`no Chromium at ${DEBIAN_CHROMIUM.join(' or ')}: run scripts/test-deps.sh or set CHROMIUM_PATH`);
  }
  return found;
}

/** The process behind each browser this module launched: it is closed by that process, not by name. */
const processes = new WeakMap<Browser, BrowserServer>();

/**
 * Launches Chromium with {@link CHROMIUM_FLAGS} (and {@link MEDIA_FLAGS} with `media`). With
 * `videoFile` (a .y4m), the fake camera plays that file in a loop instead of its own test pattern;
 * with `audioFile` (a .wav), the fake microphone plays that file in a loop instead of its beeps.
 * `executablePath` runs another program in Chromium's place (a wrapper that starts it in a network
 * namespace: test/browser/shaped-link.ts) and `args` adds flags. With `nice`, Chromium and every
 * process it starts run at that niceness: pages encoding and decoding video of fine grain take
 * both cores of a 2-core machine, and the service under test (its units time each packet's
 * arrival for the presenters' congestion control) must not wait behind them.
 */
export async function launchChromium(
  options: {
    media?: boolean;
    videoFile?: string;
    audioFile?: string;
    executablePath?: string;
    args?: readonly string[];
    nice?: number;
  } = {},
): Promise<Browser> {
  const args = [...CHROMIUM_FLAGS, ...(options.media ? MEDIA_FLAGS : []), ...(options.args ?? [])];
  if (options.videoFile) args.push(`--use-file-for-fake-video-capture=${options.videoFile}`);
  if (options.audioFile) args.push(`--use-file-for-fake-audio-capture=${options.audioFile}`);
  let executablePath = options.executablePath ?? chromiumPath();
  let wrapperDir: string | undefined;
  if (options.nice !== undefined) {
    // A wrapper, so the processes Chromium forks at start (zygote, GPU, renderers) inherit it.
    wrapperDir = mkdtempSync(join(tmpdir(), 'realtime-chromium-'));
    const wrapper = join(wrapperDir, 'chromium');
    writeFileSync(wrapper, `#!/bin/sh\nexec nice -n ${options.nice} '${executablePath}' "$@"\n`);
    chmodSync(wrapper, 0o755);
    executablePath = wrapper;
  }
  const removeWrapper = () => {
    if (wrapperDir) rmSync(wrapperDir, { recursive: true, force: true });
  };
  let server: BrowserServer;
  try {
    server = await chromium.launchServer({ executablePath, headless: true, args });
  } catch (error) {
    removeWrapper();
    throw error;
  }
  // Started: the wrapper has been read and exec'd.
  removeWrapper();
  try {
    const browser = await chromium.connect(server.wsEndpoint());
    processes.set(browser, server);
    return browser;
  } catch (error) {
    await server.kill();
    throw error;
  }
}

/**
 * Closes a browser from {@link launchChromium}: its pages and contexts, then its own process (and
 * the process group Chromium started under it), killed by its pid if it does not end within 10 s.
 * Safe to call with undefined (a suite whose setup failed) or twice.
 */
export async function closeChromium(browser: Browser | undefined): Promise<void> {
  if (!browser) return;
  const server = processes.get(browser);
  processes.delete(browser);
  await browser.close().catch(() => {});
  if (!server) return;
  const child = server.process();
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), 10_000);
  });
  const closing = server.close().catch(() => {});
  const outcome = await Promise.race([exited.then(() => 'exited' as const), late]);
  clearTimeout(timer);
  if (outcome === 'late') await server.kill();
  await closing;
}

/** A page served to Chromium: its content type and body. */
export interface Served {
  type: string;
  body: string | Buffer;
}

/**
 * Serves pages from http://127.0.0.1:<port>/ (Chromium keeps data: and about:blank pages off
 * localhost, and only a secure context such as localhost may use the camera). `route` answers a path
 * (query left on), or undefined for a 404. `host` serves on another local address instead (a page
 * from there is a secure context only to a Chromium told so by flag).
 */
export async function servePages(
  route: (path: string) => Served | undefined | Promise<Served | undefined>,
  options: { host?: string } = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const page = await route(req.url ?? '/');
    if (page) res.writeHead(200, { 'content-type': page.type }).end(page.body);
    else res.writeHead(404).end();
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
