import { Realtime } from '@realtime/node';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../packages/server/test/helpers.js';
import { closeChromium, launchChromium } from './chromium.js';
import { openSdkPage, startPageServer } from './harness.js';

type Entry = [kind: string, ...rest: unknown[]];
interface PageWindow {
  RT: typeof import('@realtime/browser');
  log: Entry[];
  client: import('@realtime/browser').RealtimeClient;
  rooms: Record<string, import('@realtime/browser').Room>;
  openGate?: () => void;
  gate?: Promise<void>;
}

describe('the browser SDK in headless Chromium against the real service', () => {
  let server: TestServer;
  let sdk: Realtime;
  let browser: Browser;
  let pages: { url: string; close(): Promise<void> };
  const opened: Page[] = [];

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

  /** A tab of `user`, connected (to the suite's service unless told); its identity function waits on a gate the test can close. */
  async function tab(user: string, to = { url: server.url, site: server.app.key, sdk }): Promise<Page> {
    const page = await openSdkPage(browser, pages.url);
    opened.push(page);
    const identity = await to.sdk.identityToken(user, { info: { name: user.toUpperCase() } });
    await page.evaluate(
      ({ url, site, identity }) => {
        const w = window as unknown as PageWindow;
        w.log = [];
        w.rooms = {};
        w.gate = Promise.resolve();
        w.client = w.RT.connect({
          url,
          site,
          identity: async () => {
            await w.gate;
            return identity;
          },
        });
        w.client.on('$state', (change) => w.log.push(['state', change.state]));
        w.client.on('notice', (data) => w.log.push(['user', 'notice', data]));
      },
      { url: to.url, site: to.site, identity },
    );
    await page.waitForFunction(() => (window as unknown as PageWindow).client.state === 'connected');
    return page;
  }

  async function join(page: Page, room: string, token: string, history?: number): Promise<void> {
    await page.evaluate(
      ({ room, token, history }) => {
        const w = window as unknown as PageWindow;
        const r = w.client.join(room, history === undefined ? { token } : { token, history });
        w.rooms[room] = r;
        r.on('*', (data, meta) => w.log.push(['room', room, meta.event, meta.id, data, meta.from]));
        r.on('$truncated', () => w.log.push(['truncated', room]));
      },
      { room, token, history },
    );
    await page.waitForFunction((room) => (window as unknown as PageWindow).rooms[room]?.status === 'joined', room);
  }

  const roomEvents = (page: Page, room: string, event?: string) =>
    page.evaluate(
      ({ room, event }) =>
        (window as unknown as PageWindow).log.filter(
          (e) => e[0] === 'room' && e[1] === room && (event === undefined || e[2] === event),
        ),
      { room, event },
    );

  async function waitForRoomEvents(page: Page, room: string, event: string, count: number): Promise<Entry[]> {
    await page.waitForFunction(
      ({ room, event, count }) =>
        (window as unknown as PageWindow).log.filter((e) => e[0] === 'room' && e[1] === room && e[2] === event)
          .length >= count,
      { room, event, count },
    );
    return roomEvents(page, room, event);
  }

  it('two pages in a room exchange events, and an emit reaches both', async () => {
    const alice = await tab('alice');
    const bob = await tab('bob');
    await join(alice, 'lobby', await sdk.roomToken('lobby', { userId: 'alice', send: ['chat'] }));
    await join(bob, 'lobby', await sdk.roomToken('lobby', { userId: 'bob', send: ['chat'] }));

    const id = await alice.evaluate(() =>
      (window as unknown as PageWindow).rooms.lobby?.send('chat', { text: 'hi bob' }),
    );
    const [atBob] = await waitForRoomEvents(bob, 'lobby', 'chat', 1);
    expect(atBob).toEqual(['room', 'lobby', 'chat', id, { text: 'hi bob' }, 'alice']);
    await bob.evaluate(() => (window as unknown as PageWindow).rooms.lobby?.send('chat', { text: 'hi alice' }));
    const [atAlice] = await waitForRoomEvents(alice, 'lobby', 'chat', 1);
    expect(atAlice?.slice(4)).toEqual([{ text: 'hi alice' }, 'bob']);

    const ids = await sdk.emit({ rooms: ['lobby'], event: 'news', data: { n: 1 }, history: { lobby: [10, 1] } });
    for (const page of [alice, bob]) {
      const [got] = await waitForRoomEvents(page, 'lobby', 'news', 1);
      expect(got?.slice(3, 5)).toEqual([ids.lobby, { n: 1 }]);
    }
  });

  it("a user's two tabs both get a user event", async () => {
    const one = await tab('carol');
    const two = await tab('carol');
    await sdk.emit({ users: ['carol'], event: 'notice', data: { hello: 'carol' } });
    for (const page of [one, two]) {
      await page.waitForFunction(() => (window as unknown as PageWindow).log.some((e) => e[0] === 'user'));
      const got = await page.evaluate(() => (window as unknown as PageWindow).log.filter((e) => e[0] === 'user'));
      expect(got).toEqual([['user', 'notice', { hello: 'carol' }]]);
    }
  });

  it('an ask is answered from a page', async () => {
    const page = await tab('dave');
    await page.evaluate(() => {
      const w = window as unknown as PageWindow;
      w.client.answer('confirm', async (data) => ({ confirmed: true, amount: (data as { amount: number }).amount }));
    });
    const replies = await sdk.ask('dave', { event: 'confirm', data: { amount: 42 }, timeout: 5000 });
    expect(replies).toHaveLength(1);
    expect(replies[0]?.data).toEqual({ confirmed: true, amount: 42 });
    expect(replies[0]?.at).toBeGreaterThan(Date.now() - 60_000);
    // An event the page has no handler for is declined at once: no reply, no wait for the timeout.
    expect(await sdk.ask('dave', { event: 'unknown', timeout: 30_000 })).toEqual([]);
  });

  /** Cuts the page off from the service side and keeps it off (its identity waits on the gate). */
  async function cutOff(page: Page, user: string): Promise<void> {
    await page.evaluate(() => {
      const w = window as unknown as PageWindow;
      w.gate = new Promise((resolve) => {
        w.openGate = resolve;
      });
    });
    expect(server.disconnectUser(server.app.key, user)).toBe(1);
    await page.waitForFunction(() => (window as unknown as PageWindow).client.state !== 'connected');
  }

  async function reconnect(page: Page): Promise<void> {
    await page.evaluate(() => (window as unknown as PageWindow).openGate?.());
    await page.waitForFunction(() => (window as unknown as PageWindow).client.state === 'connected');
  }

  it('resumes after a cut: all 50 events missed arrive once each, in order, before live ones', async () => {
    const page = await tab('erin');
    await join(page, 'resume', await sdk.roomToken('resume', { userId: 'erin' }));
    await sdk.emit({ rooms: ['resume'], event: 'n', data: 0, history: { resume: [100, 1] } });
    await waitForRoomEvents(page, 'resume', 'n', 1);

    await cutOff(page, 'erin');
    const sent: string[] = [];
    for (let i = 1; i <= 50; i++) {
      const ids = await sdk.emit({ rooms: ['resume'], event: 'n', data: i, history: { resume: [100, 1] } });
      sent.push(ids.resume ?? '');
    }
    await reconnect(page);
    await sdk.emit({ rooms: ['resume'], event: 'live', data: 'after', history: { resume: [100, 1] } });
    await waitForRoomEvents(page, 'resume', 'live', 1);

    const got = await roomEvents(page, 'resume');
    const numbers = got.filter((e) => e[2] === 'n').map((e) => e[4]);
    expect(numbers).toEqual(Array.from({ length: 51 }, (_, i) => i));
    expect(
      got
        .filter((e) => e[2] === 'n')
        .slice(1)
        .map((e) => e[3]),
    ).toEqual(sent);
    expect(got.at(-1)?.[2]).toBe('live');
    expect(await page.evaluate(() => (window as unknown as PageWindow).log.some((e) => e[0] === 'truncated'))).toBe(
      false,
    );
  });

  it('resumes past the kept window: the truncated flag is set and what is kept arrives', async () => {
    const page = await tab('frank');
    await join(page, 'window', await sdk.roomToken('window', { userId: 'frank' }));
    await sdk.emit({ rooms: ['window'], event: 'n', data: 0, history: { window: [20, 1] } });
    await waitForRoomEvents(page, 'window', 'n', 1);

    await cutOff(page, 'frank');
    for (let i = 1; i <= 50; i++)
      await sdk.emit({ rooms: ['window'], event: 'n', data: i, history: { window: [20, 1] } });
    await reconnect(page);
    await page.waitForFunction(() => (window as unknown as PageWindow).log.some((e) => e[0] === 'truncated'));
    const numbers = (await waitForRoomEvents(page, 'window', 'n', 21)).map((e) => e[4]);
    expect(numbers).toEqual([0, ...Array.from({ length: 20 }, (_, i) => 31 + i)]);
  });

  it('resumes after the history was lost (a restart without the data): truncated, a new epoch, then new events', async () => {
    // A service of its own, stopped and started again on its port without its data folder.
    const first = await startTestServer();
    const port = Number(new URL(first.url).port);
    const before = new Realtime({ url: first.url, key: first.app.key, secret: first.app.secret });
    const page = await tab('ivan', { url: first.url, site: first.app.key, sdk: before });
    let firstOpen = true;
    let second: TestServer | undefined;
    let after: Realtime | undefined;
    try {
      await join(page, 'wiped', await before.roomToken('wiped', { userId: 'ivan' }));
      await before.emit({ rooms: ['wiped'], event: 'n', data: 'old', history: { wiped: [100, 1] } });
      await waitForRoomEvents(page, 'wiped', 'n', 1);
      const oldEpoch = await page.evaluate(() => (window as unknown as PageWindow).rooms.wiped?.epoch);
      expect(oldEpoch).toEqual(expect.any(String));
      firstOpen = false;
      await before.close();
      await first.close(); // and its data folder with it

      second = await startTestServer({ port, app: first.app });
      after = new Realtime({ url: second.url, key: second.app.key, secret: second.app.secret });
      await page.waitForFunction(() => (window as unknown as PageWindow).log.some((e) => e[0] === 'truncated'));
      await page.waitForFunction(() => (window as unknown as PageWindow).rooms.wiped?.status === 'joined');
      const newEpoch = await page.evaluate(() => (window as unknown as PageWindow).rooms.wiped?.epoch);
      expect(newEpoch).toEqual(expect.any(String));
      expect(newEpoch).not.toBe(oldEpoch);
      await after.emit({ rooms: ['wiped'], event: 'n', data: 'new', history: { wiped: [100, 1] } });
      expect((await waitForRoomEvents(page, 'wiped', 'n', 2)).map((e) => e[4])).toEqual(['old', 'new']);
    } finally {
      await page.close();
      if (firstOpen) await Promise.all([before.close(), first.close()]);
      await after?.close();
      await second?.close();
    }
  });

  it('presence with two tabs of one user: one joined, one left when the last tab closes', async () => {
    const watcher = await tab('gina');
    await join(watcher, 'here', await sdk.roomToken('here', { userId: 'gina', presence: true }));
    const first = await tab('hank');
    const second = await tab('hank');
    await join(first, 'here', await sdk.roomToken('here', { userId: 'hank', presence: true }));
    await join(second, 'here', await sdk.roomToken('here', { userId: 'hank', presence: true }));
    await waitForRoomEvents(watcher, 'here', '$member.joined', 1);
    const members = await second.evaluate(() => (window as unknown as PageWindow).rooms.here?.members());
    expect(members?.map((m) => m.user).sort()).toEqual(['gina', 'hank']);
    expect(members?.find((m) => m.user === 'hank')?.info).toEqual({ name: 'HANK' });

    await first.close();
    await second.evaluate(() => (window as unknown as PageWindow).rooms.here?.send('ping').catch(() => undefined));
    await sdk.emit({ rooms: ['here'], event: 'marker', data: 1 });
    await waitForRoomEvents(watcher, 'here', 'marker', 1);
    expect(await roomEvents(watcher, 'here', '$member.left')).toHaveLength(0);

    await second.close();
    const left = await waitForRoomEvents(watcher, 'here', '$member.left', 1);
    expect(left.map((e) => (e[4] as { user: string }).user)).toEqual(['hank']);
    const joined = await roomEvents(watcher, 'here', '$member.joined');
    expect(joined.filter((e) => (e[4] as { user: string }).user === 'hank')).toHaveLength(1);
  });
});
