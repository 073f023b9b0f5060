import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type App, ensureDevelopmentApp, type RunningServer, startServer } from '@realtime/server';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The demo's own token server, wired to the service as examples/chat/start.mjs wires it; the service
// runs here so that the test can stop it and start it again on the same port and data folder.
import { startDemo } from '../../examples/chat/server.mjs';
import { closeChromium, launchChromium } from './chromium.js';

/**
 * The chat demo's states in headless Chromium, each driven for real: a name the demo's server
 * refuses, a token request answering 500 (the page's view of a failed demo server) then recovering,
 * messages pending while the service is down and acknowledged once it is back, a send the service
 * refuses, the reconnect banner, member notices that tell only real changes across reconnects and
 * a restart, a rotated secret, the 390 px layout and the favicon.
 *
 * DEMO_SCREENSHOTS=docs/images writes demo-chat-1280.png and demo-chat-390.png there; without it
 * the screenshots are still taken and checked, not written.
 */

const CLI = fileURLToPath(new URL('../../packages/server/dist/cli.js', import.meta.url));

interface Demo {
  url: string;
  close(): Promise<void>;
}

let dir: string;
let dataDir: string;
let service: RunningServer;
let port: number;
let development: Awaited<ReturnType<typeof ensureDevelopmentApp>>;
let app: App;
let demo: Demo;
let browser: Browser;
const contexts: BrowserContext[] = [];

function startService(at: number): Promise<RunningServer> {
  return startServer({ host: '127.0.0.1', port: at, dataDir, allowPrivateWebhooks: true });
}

/** The service stopped and, after `whileDown`, started again on the same port and data. */
async function restartService(whileDown: () => Promise<void> = async () => {}): Promise<void> {
  await service.close();
  try {
    await whileDown();
  } finally {
    service = await startService(port);
  }
}

/** A tab of the demo (its own browser context) at `query`, `width` px wide; not waited on. */
async function open(query: string, width = 1280, before?: (page: Page) => Promise<void>): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 760 } });
  contexts.push(context);
  const page = await context.newPage();
  await before?.(page);
  await page.goto(`${demo.url}/?${query}`);
  return page;
}

/** A tab of the demo as `name`, connected and in the lobby. */
async function tab(name: string, before?: (page: Page) => Promise<void>): Promise<Page> {
  const page = await open(`name=${name}&ice=loopback`, 1280, before);
  await connected(page);
  return page;
}

async function connected(page: Page): Promise<void> {
  await page.locator('#state.connected').waitFor({ timeout: 30_000 });
  await page.locator('#banner').waitFor({ state: 'hidden' });
}

/** The member notices of the page's log ("ben joined", "ben left"), in order. */
function memberNotices(page: Page): Promise<string[]> {
  return page.locator('#log li.member').allTextContents();
}

/** The page's members list, as shown. */
function members(page: Page): Promise<string[]> {
  return page.locator('#members li').evaluateAll((items) => items.map((li) => li.firstChild?.textContent ?? ''));
}

/** In the page: records each member its list shows as away, once, in `window.away`, and when the first was. */
function recordAway(): void {
  const w = window as unknown as { away: string[]; awayAt?: number };
  const list = document.getElementById('members') as HTMLElement;
  w.away = [];
  w.awayAt = undefined;
  new MutationObserver(() => {
    for (const li of list.querySelectorAll('li.away')) {
      if (!w.away.includes(li.textContent ?? '')) w.away.push(li.textContent ?? '');
      w.awayAt ??= performance.now();
    }
  }).observe(list, { childList: true, subtree: true });
}

function awaySeen(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { away: string[] }).away);
}

async function say(page: Page, text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** The page's own line of `text` in the log. */
const line = (page: Page, text: string) => page.locator('#log li[data-state]', { hasText: text });

/** A screenshot of the tab, checked as a PNG `width` wide; written under DEMO_SCREENSHOTS when set. */
async function screenshot(page: Page, file: string, width: number): Promise<void> {
  const png = await page.screenshot();
  expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
  expect(png.readUInt32BE(16)).toBe(width); // the IHDR chunk's width
  const folder = process.env.DEMO_SCREENSHOTS;
  if (folder) {
    mkdirSync(resolve(folder), { recursive: true });
    writeFileSync(resolve(folder, file), png);
  }
}

describe('the chat demo in headless Chromium: errors, pending sends, reconnects', { timeout: 120_000 }, () => {
  let ann: Page;
  let ben: Page;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'realtime-demo-chat-'));
    dataDir = join(dir, 'data');
    service = await startService(0);
    port = service.port;
    development = await ensureDevelopmentApp({ dataDir });
    app = development.app;
    let last = app;
    demo = await startDemo({
      serviceUrl: service.url,
      app: async () => {
        last = (await development.current()) ?? last;
        return last;
      },
      port: 0,
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await closeChromium(browser);
    await demo?.close();
    await development?.close();
    await service?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a name the demo refuses is shown next to the name field; a good one joins', async () => {
    ann = await open('name=server&ice=loopback');
    const error = ann.locator('#name-error');
    await error.waitFor();
    expect(await error.textContent()).toBe('“server” is kept for the demo itself: pick another name.');
    const field = ann.getByRole('textbox', { name: 'Name' });
    expect(await field.getAttribute('aria-invalid')).toBe('true');
    expect(await field.getAttribute('aria-describedby')).toBe('name-error');
    // Next to the field: right under it.
    const [fieldBox, errorBox] = [await field.boundingBox(), await error.boundingBox()];
    expect(errorBox && fieldBox && errorBox.y - (fieldBox.y + fieldBox.height)).toBeLessThan(24);
    expect(await ann.locator('#state').textContent()).toBe('offline');
    expect(await ann.getByRole('button', { name: 'Send' }).isDisabled()).toBe(true);

    await field.fill('ann');
    await ann.getByRole('button', { name: 'Join' }).click();
    await connected(ann);
    await error.waitFor({ state: 'hidden' });
    expect(await field.getAttribute('aria-invalid')).toBeNull();
    expect(new URL(ann.url()).searchParams.get('name')).toBe('ann');

    // A refused new name leaves the session as it was.
    await field.fill('a<b>');
    await ann.getByRole('button', { name: 'Join' }).click();
    await ann.locator('#name-error', { hasText: 'A name may have letters, digits, spaces, _ . and - only.' }).waitFor();
    expect(await ann.locator('#state').getAttribute('class')).toBe('connected');
    await field.fill('x'.repeat(41));
    await ann.getByRole('button', { name: 'Join' }).click();
    await ann.locator('#name-error', { hasText: 'A name is at most 40 characters.' }).waitFor();
    await field.fill('ann');
  });

  it('a token request that fails shows an error with Retry, and Retry recovers', async () => {
    const failing = async (page: Page) => {
      await page.route(/\/token\?/, (route) =>
        route.fulfill({ status: 500, contentType: 'application/json', body: '{"error":"down"}' }),
      );
    };
    ben = await open('name=ben&ice=loopback', 1280, failing);
    const problem = ben.getByRole('alert').filter({ hasText: 'Could not get a token' });
    await problem.waitFor();
    expect(await problem.textContent()).toContain('Could not get a token: the demo server answered 500.');
    expect(await ben.locator('#state').textContent()).toBe('offline');
    // Retry while the demo server still fails: the error stays.
    await ben.getByRole('button', { name: 'Retry' }).click();
    await problem.waitFor();
    await ben.unroute(/\/token\?/);
    await ben.getByRole('button', { name: 'Retry' }).click();
    await connected(ben);
    await problem.waitFor({ state: 'hidden' });
    await ann.locator('#log li.member', { hasText: 'ben joined' }).waitFor();
    await ann.locator('#members li', { hasText: 'ben' }).waitFor();
  });

  it('while the service is down: a banner, sends pending; once back: acknowledged, and no member noise', async () => {
    const before = { ann: await memberNotices(ann), ben: await memberNotices(ben) };
    expect(before.ann).toEqual(['ben joined']);
    expect(before.ben).toEqual([]);
    // Each page notes when its list shows a member away (gone, not yet told): the noise held back.
    for (const page of [ann, ben]) await page.evaluate(recordAway);
    // Each reconnect attempt fetches fresh tokens from the demo server first.
    let tokenFetches = 0;
    const countTokens = (response: { url(): string }) => {
      if (/\/token\?/.test(response.url())) tokenFetches++;
    };

    await restartService(async () => {
      for (const page of [ann, ben]) {
        await page.getByRole('status').filter({ hasText: 'Reconnecting…' }).waitFor();
        expect(await page.locator('#state').getAttribute('class')).toBe('reconnecting');
      }
      await say(ann, 'are you there?');
      const pending = line(ann, 'are you there?');
      await pending.locator('.mark', { hasText: 'sending…' }).waitFor();
      expect(await pending.getAttribute('data-state')).toBe('pending');
      // Still pending after two more tries to reach the service (the first of them found it away):
      // nothing acknowledges it while the service is away.
      tokenFetches = 0;
      ann.on('response', countTokens);
      await expect.poll(() => tokenFetches, { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
      ann.off('response', countTokens);
      expect(await pending.getAttribute('data-state')).toBe('pending');
    });

    for (const page of [ann, ben]) await connected(page);
    const sent = line(ann, 'are you there?');
    await ann.locator('#log li[data-state="sent"]', { hasText: 'are you there?' }).waitFor({ timeout: 20_000 });
    expect(await sent.locator('.mark').count()).toBe(0);
    await ben.locator('#log li', { hasText: 'are you there?' }).waitFor();
    // Both back in each other's list: from here no notice about this restart can come.
    for (const page of [ann, ben]) {
      await page.waitForFunction(
        () => [...document.querySelectorAll('#members li:not(.away)')].length === 2,
        undefined,
        { timeout: 30_000 },
      );
    }
    expect(await memberNotices(ann)).toEqual(before.ann);
    expect(await memberNotices(ben)).toEqual(before.ben);
    // The first page back found the other missing: there was a difference to hold back.
    expect([...(await awaySeen(ann)), ...(await awaySeen(ben))]).not.toEqual([]);

    // One page's socket closed by the service: the others see no "left / joined" either.
    // (The reconnect may take a few milliseconds only: the states are recorded, not watched.)
    await ben.evaluate(() => {
      const state = document.getElementById('state') as HTMLElement;
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => seen.push(state.className)).observe(state, { attributes: true });
    });
    await ann.evaluate(recordAway);
    expect(service.disconnectUser(app.key, 'ben')).toBe(1);
    await ben.waitForFunction(() => {
      const seen = (window as unknown as { seen: string[] }).seen;
      return seen.includes('reconnecting') && seen.at(-1) === 'connected';
    });
    // Past the demo's 3 s grace for a member gone, counted from when ann's list showed ben away: a
    // timer of the demo page's own, which no test clock reaches.
    await ann.waitForFunction(
      () => {
        const { awayAt } = window as unknown as { awayAt?: number };
        return awayAt !== undefined && performance.now() > awayAt + 3_300;
      },
      undefined,
      { timeout: 15_000, polling: 100 },
    );
    expect(await memberNotices(ann)).toEqual(before.ann);
    expect(await members(ann)).toEqual(['ann', 'ben']);
    expect(await awaySeen(ann)).toEqual(['ben (away)']);
  });

  it('a failed token request while reconnecting is shown, and the page recovers by itself', async () => {
    await restartService(async () => {
      await ben.route(/\/token\?/, (route) => route.fulfill({ status: 503, body: '' }));
      await ben.getByRole('alert').filter({ hasText: 'Could not get a token' }).waitFor({ timeout: 20_000 });
    });
    const problem = ben.getByRole('alert').filter({ hasText: 'Could not get a token' });
    expect(await problem.textContent()).toContain('the demo server answered 503');
    expect(await problem.textContent()).toContain('Trying again…');
    expect(await ben.getByRole('button', { name: 'Retry now' }).isVisible()).toBe(true);
    await ben.getByRole('status').filter({ hasText: 'Reconnecting…' }).waitFor();
    await ben.unroute(/\/token\?/);
    await connected(ben);
    await problem.waitFor({ state: 'hidden' });
    await connected(ann);
  });

  it('a send the service refuses is marked "failed — retry"; retrying sends it; an answer lost is found again', async () => {
    // cat's socket goes through the test, which renames the event of one send to one the room token
    // does not allow (the service itself refuses it: not_allowed), and drops the socket instead of
    // passing on the answer to another (the service took that one: the re-join's replay brings it back).
    let renamed = false;
    let lostRef: number | undefined;
    let dropped = false;
    const cat = await tab('cat', (page) =>
      page.routeWebSocket(/\/socket/, (ws) => {
        const server = ws.connectToServer();
        ws.onMessage((message) => {
          const frame = JSON.parse(String(message)) as { t?: string; ref?: number; data?: { text?: string } };
          if (!renamed && frame.t === 'send' && frame.data?.text === 'refuse me') {
            renamed = true;
            server.send(JSON.stringify({ ...frame, event: 'shout' }));
            return;
          }
          if (frame.t === 'send' && frame.data?.text === 'answer lost') lostRef = frame.ref;
          server.send(message);
        });
        server.onMessage((message) => {
          const frame = JSON.parse(String(message)) as { t?: string; ref?: number };
          if (!dropped && frame.t === 'sent' && frame.ref !== undefined && frame.ref === lostRef) {
            dropped = true;
            server.close();
            ws.close({ code: 4100, reason: 'the test dropped the answer' });
          } else ws.send(message);
        });
      }),
    );
    await ann.locator('#log li.member', { hasText: 'cat joined' }).waitFor();

    await say(cat, 'refuse me');
    const retry = line(cat, 'refuse me').getByRole('button', { name: 'failed — retry' });
    await retry.waitFor();
    expect(renamed).toBe(true);
    expect(await retry.getAttribute('title')).toMatch(/not allow/i);
    expect(await line(cat, 'refuse me').getAttribute('data-state')).toBe('failed');
    await retry.click();
    await cat.locator('#log li[data-state="sent"]', { hasText: 'refuse me' }).waitFor();
    await ann.locator('#log li', { hasText: 'refuse me' }).waitFor();
    expect(await ann.locator('#log li', { hasText: 'refuse me' }).count()).toBe(1);

    await say(cat, 'answer lost');
    await cat.locator('#log li[data-state="failed"]', { hasText: 'answer lost' }).waitFor();
    expect(dropped).toBe(true);
    await cat.locator('#log li[data-state="sent"]', { hasText: 'answer lost' }).waitFor({ timeout: 20_000 });
    expect(await cat.locator('#log li', { hasText: 'answer lost' }).count()).toBe(1);
    await ann.locator('#log li', { hasText: 'answer lost' }).waitFor();

    // A real leave is told, once, after the grace.
    await cat.context().close();
    // Each page is told on its own socket: wait for both before counting.
    for (const page of [ann, ben])
      await page.locator('#log li.member', { hasText: 'cat left' }).waitFor({ timeout: 10_000 });
    expect(await memberNotices(ann)).toEqual(['ben joined', 'cat joined', 'cat left']);
    expect(await memberNotices(ben)).toEqual(['cat joined', 'cat left']);
  });

  it('follows a rotated secret: open pages keep sending, reconnect with the new one, new pages join', async () => {
    const rotated = spawnSync(process.execPath, [CLI, 'apps', 'rotate-secret', app.key, '--data', dataDir], {
      encoding: 'utf8',
    });
    expect(rotated.status, rotated.stderr).toBe(0);
    const secret = /^secret: (\S+)$/m.exec(rotated.stdout)?.[1];
    expect(secret).toBeDefined();
    expect(secret).not.toBe(app.secret);

    await say(ann, 'still here after the rotation');
    await ann.locator('#log li[data-state="sent"]', { hasText: 'still here after the rotation' }).waitFor();
    await ben.locator('#log li', { hasText: 'still here after the rotation' }).waitFor();

    // A restart: every page says hello again, with an identity signed with the new secret.
    await restartService();
    for (const page of [ann, ben]) await connected(page);
    await say(ben, 'and after a reconnect');
    await ben.locator('#log li[data-state="sent"]', { hasText: 'and after a reconnect' }).waitFor();
    await ann.locator('#log li', { hasText: 'and after a reconnect' }).waitFor();
    // The re-joins' replays bring the pages' own sends back: each is shown once.
    for (const text of ['are you there?', 'still here after the rotation']) {
      expect(await ann.locator('#log li', { hasText: text }).count()).toBe(1);
    }
    const dan = await tab('dan');
    await say(dan, 'hello from dan');
    await ann.locator('#log li', { hasText: 'hello from dan' }).waitFor();
    await dan.context().close();
  });

  it('works at 390 px: no sideways scroll, every control in view; a favicon; screenshots', async () => {
    await ann.locator('#log li.member', { hasText: 'dan left' }).waitFor({ timeout: 10_000 });
    const icon = await ann.locator('link[rel="icon"]').getAttribute('href');
    expect(icon).toBe('/favicon.svg');
    const answer = await ann.request.get(new URL(icon ?? '', demo.url).href);
    expect(answer.status()).toBe(200);
    expect(answer.headers()['content-type']).toBe('image/svg+xml');

    await screenshot(ann, 'demo-chat-1280.png', 1280);

    await ann.setViewportSize({ width: 390, height: 844 });
    expect(await ann.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    const controls = [
      ann.getByRole('textbox', { name: 'Name' }),
      ann.getByRole('button', { name: 'Join' }),
      ann.getByRole('button', { name: 'Go live' }),
      ann.getByRole('textbox', { name: 'Message' }),
      ann.getByRole('button', { name: 'Send' }),
      ann.getByRole('button', { name: 'call ben' }),
    ];
    for (const control of controls) {
      expect(await control.isVisible()).toBe(true);
      const box = await control.boundingBox();
      expect(box).not.toBeNull();
      if (box) {
        expect(box.x).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width).toBeLessThanOrEqual(390);
        expect(box.y + box.height).toBeLessThanOrEqual(844);
      }
    }
    // The reconnect banner and a pending send fit too.
    await restartService(async () => {
      await ann.getByRole('status').filter({ hasText: 'Reconnecting…' }).waitFor();
      await say(ann, 'sent from a phone while the service restarts');
      await line(ann, 'sent from a phone').locator('.mark', { hasText: 'sending…' }).waitFor();
      expect(await ann.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await screenshot(ann, 'demo-chat-390.png', 390);
    });
    await connected(ann);
    await ann.locator('#log li[data-state="sent"]', { hasText: 'sent from a phone' }).waitFor({ timeout: 20_000 });
  });
});
