import { Realtime } from '@realtime/node';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../packages/server/test/helpers.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, startPageServer } from './harness.js';

type Entry = [kind: string, ...rest: unknown[]];
interface SmokeWindow {
  RT: typeof import('@realtime/browser');
  log: Entry[];
  client: import('@realtime/browser').RealtimeClient;
  room?: import('@realtime/browser').Room;
}

/**
 * One pass through what a page does, on whichever engine the vitest project picks (embedded,
 * stores answering later, Redis): the Chromium suites run in full on the embedded engine only, and
 * this is what shows the browser path on the others.
 */
describe('smoke: a Chromium page on this project’s engine', () => {
  let server: TestServer;
  let sdk: Realtime;
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    server = await startTestServer();
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    pages = await startPageServer();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await closeChromium(browser);
    await pages?.close();
    await sdk?.close();
    await server?.close();
  });

  async function tab(user: string): Promise<Page> {
    const page = await openSdkPage(browser, pages.url);
    const identity = await sdk.identityToken(user, { info: { name: user } });
    const token = await sdk.roomToken('smoke', { userId: user, presence: true, send: ['chat'] });
    await page.evaluate(
      async ({ url, site, identity, token }) => {
        const w = window as unknown as SmokeWindow;
        w.log = [];
        w.client = w.RT.connect({ url, site, identity: async () => identity });
        w.client.on('notice', (data) => w.log.push(['user', 'notice', data]));
        w.client.answer('confirm', async (data) => ({ ok: true, got: data }));
        w.room = w.client.join('smoke', { token, history: 10 });
        w.room.on('*', (data, meta) => w.log.push(['room', meta.event, meta.id, data, meta.from]));
      },
      { url: server.url, site: server.app.key, identity, token },
    );
    await page.waitForFunction(() => (window as unknown as SmokeWindow).room?.status === 'joined');
    return page;
  }

  const logged = (page: Page, kind: string, event: string) =>
    page.evaluate(
      ({ kind, event }) => (window as unknown as SmokeWindow).log.filter((e) => e[0] === kind && e[1] === event),
      { kind, event },
    );

  async function waitFor(page: Page, kind: string, event: string): Promise<Entry[]> {
    await page.waitForFunction(
      ({ kind, event }) => (window as unknown as SmokeWindow).log.some((e) => e[0] === kind && e[1] === event),
      { kind, event },
    );
    return logged(page, kind, event);
  }

  it('joins with presence, sends, gets an emit and a user event, answers an ask, and sees a member leave', async () => {
    const ann = await tab('ann');
    const bob = await tab('bob');

    // Presence: ann sees bob join, and both list the two of them.
    const [joined] = await waitFor(ann, 'room', '$member.joined');
    expect(joined?.[3]).toMatchObject({ user: 'bob' });
    const members = await bob.evaluate(() => (window as unknown as SmokeWindow).room?.members());
    expect(members?.map((m) => m.user).sort()).toEqual(['ann', 'bob']);

    // A page send reaches the other page, from its sender, with the id the sender got.
    const id = await ann.evaluate(() => (window as unknown as SmokeWindow).room?.send('chat', { text: 'hi' }));
    const [chat] = await waitFor(bob, 'room', 'chat');
    expect(chat).toEqual(['room', 'chat', id, { text: 'hi' }, 'ann']);

    // The server's emit (kept in history) and a user event reach the pages.
    const ids = await sdk.emit({ rooms: ['smoke'], event: 'news', data: { n: 1 }, history: { smoke: [10, 1] } });
    for (const page of [ann, bob])
      expect((await waitFor(page, 'room', 'news'))[0]?.slice(2, 4)).toEqual([ids.smoke, { n: 1 }]);
    await sdk.emit({ users: ['bob'], event: 'notice', data: 'for bob' });
    expect(await waitFor(bob, 'user', 'notice')).toEqual([['user', 'notice', 'for bob']]);

    // The server asks bob's page and gets its reply.
    const replies = await sdk.ask('bob', { event: 'confirm', data: 7, timeout: 5000 });
    expect(replies.map((r) => r.data)).toEqual([{ ok: true, got: 7 }]);

    // bob's page closes: ann sees him leave.
    await bob.close();
    const [left] = await waitFor(ann, 'room', '$member.left');
    expect(left?.[3]).toMatchObject({ user: 'bob' });
    await ann.close();
  });
});
