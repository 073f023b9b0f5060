import { fileURLToPath } from 'node:url';
import { Realtime } from '@realtime/node';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../packages/server/test/helpers.js';
import { closeChromium, launchChromium, servePages } from './chromium.js';
import type { PageConfig, ReactWindow } from './react-page.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const WAIT = { timeout: 5000 };

/** The page of react-page.ts with React in development (StrictMode runs effects twice), from the packages' sources. */
async function bundlePage(): Promise<string> {
  const result = await build({
    entryPoints: [here('./react-page.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    define: { 'process.env.NODE_ENV': '"development"' },
    alias: {
      '@realtime/react': here('../../packages/react/src/index.ts'),
      '@realtime/browser': here('../../packages/browser/src/index.ts'),
      '@realtime/protocol': here('../../packages/protocol/src/index.ts'),
    },
    logLevel: 'silent',
  });
  const [file] = result.outputFiles;
  if (!file) throw new Error('esbuild gave no output');
  return file.text;
}

/** @realtime/react's hooks in a React page, on Chromium, against a real service. */
describe('@realtime/react in Chromium', () => {
  let server: TestServer;
  let sdk: Realtime;
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    const script = await bundlePage();
    const html = '<!doctype html><meta charset="utf-8"><title>react</title><div id="root"></div>';
    pages = await servePages((path) => {
      if (path === '/app.js') return { type: 'text/javascript', body: script };
      if (path === '/') return { type: 'text/html', body: `${html}<script type="module" src="/app.js"></script>` };
      return undefined;
    });
    server = await startTestServer();
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await closeChromium(browser);
    await pages?.close();
    await sdk?.close();
    await server?.close();
  });

  const text = (page: Page, selector: string) => page.textContent(selector, WAIT);
  /** Waits until the items of `list` are `expected`, in order. */
  const items = (page: Page, list: string, expected: string[]) =>
    page.waitForFunction(
      ({ list, expected }) =>
        JSON.stringify([...document.querySelectorAll(`${list} li`)].map((li) => li.textContent)) ===
        JSON.stringify(expected),
      { list, expected },
      WAIT,
    );
  const shows = (page: Page, selector: string, value: string) =>
    page.waitForFunction(
      ({ selector, value }) => document.querySelector(selector)?.textContent === value,
      { selector, value },
      WAIT,
    );

  async function open(user: string): Promise<Page> {
    const page = await browser.newPage();
    page.on('pageerror', (error) => console.error(`${user}'s page:`, error));
    await page.goto(pages.url);
    await page.waitForFunction(() => typeof (window as unknown as ReactWindow).mount === 'function', null, WAIT);
    const config: PageConfig = {
      url: server.url,
      site: server.app.key,
      identity: await sdk.identityToken(user),
      tokens: {
        lobby: await sdk.roomToken('lobby', { userId: user, presence: true, send: ['chat'] }),
        side: await sdk.roomToken('side', { userId: user, presence: true }),
      },
    };
    await page.evaluate((config) => (window as unknown as ReactWindow).mount(config), config);
    await shows(page, '#state', 'connected');
    await page.click('#toggle');
    return page;
  }

  it('connects, joins, renders emits, sends and members, and leaves the room on unmount and on a new name', async () => {
    const ann = await open('ann');
    await shows(ann, '#room', 'joined');
    const bob = await open('bob');
    await shows(bob, '#room', 'joined');
    for (const page of [ann, bob]) await items(page, '#members', ['ann', 'bob']);
    // StrictMode ran the effects twice: still one join, no leave.
    const sent = async (page: Page) =>
      (await page.evaluate(() => (window as unknown as ReactWindow).sent)).filter((frame) =>
        /^(join|leave) /.test(frame),
      );
    expect(await sent(ann)).toEqual(['join lobby']);

    // The server's emit renders on both pages, once each (StrictMode's second run left no extra listener).
    await sdk.emit({ rooms: ['lobby'], event: 'news', data: { text: 'from the server' } });
    for (const page of [ann, bob]) await items(page, '#lines', ['v1 news: from the server']);
    // And a user event, through useEvent on the client.
    await sdk.emit({ users: ['bob'], event: 'notice', data: 'for bob' });
    await shows(bob, '#notice', 'for bob');
    expect(await text(ann, '#notice')).toBe('');

    // A page send renders on the other page, from its user.
    await ann.fill('#text', 'hi');
    await ann.click('#send');
    await items(bob, '#lines', ['v1 news: from the server', 'v1 ann: hi']);

    // A new listener (it reads the new label) is used without listening to the room again.
    const listens = await bob.evaluate(() => (window as unknown as ReactWindow).chatListens);
    await bob.click('#relabel');
    await ann.fill('#text', 'again');
    await ann.click('#send');
    await items(bob, '#lines', ['v1 news: from the server', 'v1 ann: hi', 'v2 ann: again']);
    expect(await bob.evaluate(() => (window as unknown as ReactWindow).chatListens)).toBe(listens);

    // bob's lobby unmounts: the room is left (ann sees him go); bob's page stays connected.
    await bob.click('#toggle');
    await items(ann, '#members', ['ann']);
    expect(await sent(bob)).toEqual(['join lobby', 'leave lobby']);
    expect(await text(bob, '#state')).toBe('connected');
    expect(await bob.$('#room')).toBeNull();
    // And mounts again: joined once more.
    await bob.click('#toggle');
    await shows(bob, '#room', 'joined');
    await items(ann, '#members', ['ann', 'bob']);

    // bob's room name changes: he leaves lobby and joins side, alone there.
    await bob.click('#move');
    await items(ann, '#members', ['ann']);
    await shows(bob, '#room', 'joined');
    await items(bob, '#members', ['bob']);
    await Promise.all([ann.close(), bob.close()]);
  });
});
