/**
 * The service and the SDK's test page for suites with shaped links (./shaped-link.ts): the API, the
 * forwarding units and the page all on the links' address, which pages in the namespaces reach
 * through their links and pages outside reach over loopback.
 */
import { readFile } from 'node:fs/promises';
import { Realtime } from '@realtime/node';
import { startTestServer, type TestServer } from '../../packages/server/test/helpers.js';
import { servePages } from './chromium.js';
import type { ShapedLinks } from './shaped-link.js';

const BUNDLE = new URL('../../packages/browser/dist/realtime.browser.js', import.meta.url);

export interface ShapedService {
  server: TestServer;
  sdk: Realtime;
  /** The SDK page (`/` loads the bundle as `window.RT`, then sets `window.ready`), on the links' address. */
  pageUrl: string;
  /** The page's origin, for `secureOrigins` (a page there may then use the camera). */
  origin: string;
  close(): Promise<void>;
}

/**
 * Starts a test server bound to `links.address` whose forwarding units announce that address only
 * and exchange media with 127.0.0.1 (pages outside the links), that address, and each link's inner
 * address; and serves the SDK page there too. `options` are the test server's (but its address and
 * its units' addresses).
 */
export async function startShapedService(
  links: ShapedLinks,
  options: Omit<Parameters<typeof startTestServer>[0] & object, 'host' | 'streams'> = {},
): Promise<ShapedService> {
  const server = await startTestServer({
    ...options,
    host: links.address,
    streams: {
      mediaAddresses: [links.address],
      remoteAddresses: ['127.0.0.1', links.address, ...links.links.map((link) => link.inner)],
    },
  });
  const html =
    '<!doctype html><meta charset="utf-8"><title>t</title><script type="module">' +
    "import * as RT from '/realtime.browser.js'; window.RT = RT; window.ready = true;</script>";
  const pages = await servePages(
    async (path) => {
      if (path === '/realtime.browser.js') return { type: 'text/javascript', body: await readFile(BUNDLE) };
      if (path === '/' || path.startsWith('/?')) return { type: 'text/html', body: html };
      return undefined;
    },
    { host: links.address },
  ).catch(async (error: unknown) => {
    await server.close();
    throw error;
  });
  const sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  return {
    server,
    sdk,
    pageUrl: pages.url,
    origin: new URL(pages.url).origin,
    close: async () => {
      await sdk.close();
      await pages.close();
      await server.close();
    },
  };
}
