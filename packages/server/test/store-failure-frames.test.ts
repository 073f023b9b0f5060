import { Realtime } from '@realtime/node';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../src/engines/store-error.js';
import type { AppStore } from '../src/engines/types.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * A store that fails while a page is in a room (its app cannot be read: Redis is away, the disk is
 * broken) answers the page's frames `unavailable` with their `ref` and room, not `bad_frame`: the
 * page tells a refused frame from a service that cannot answer now, and retries.
 */

let server: TestServer | undefined;
let sdk: Realtime | undefined;
const pages: RawPage[] = [];
let failApps = false;
/** The app cache keeps an app a second: the test moves the service's clock past it. */
let skewMs = 0;

afterEach(async () => {
  failApps = false;
  skewMs = 0;
  await Promise.all(pages.splice(0).map((p) => p.close()));
  await sdk?.close();
  sdk = undefined;
  await server?.close();
  server = undefined;
});

function failingApps(apps: AppStore): AppStore {
  return {
    get: (key) => {
      if (failApps) throw new StoreError('unavailable');
      return apps.get(key);
    },
    list: () => apps.list(),
    upsert: (app) => apps.upsert(app),
    setSecret: (key, secret) => apps.setSecret(key, secret),
    setWebhook: (key, url) => apps.setWebhook(key, url),
    remove: (key) => apps.remove(key),
    close: () => apps.close(),
  };
}

describe('a store failure while a page sends', () => {
  it('answers the send and the join `unavailable` with their ref and room; the send after it goes through', async () => {
    server = await startTestServer({
      // The failure is made at the embedded engine's store seam, whichever project runs this.
      engine: { kind: 'embedded', asyncStores: process.env.REALTIME_TEST_ENGINE === 'embedded-async' },
      now: () => Date.now() + skewMs,
      wrapStores: ({ apps }) => ({ apps: failingApps(apps) }),
    });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken('ann'));
    pages.push(page);
    page.send({ t: 'join', ref: 1, room: 'lobby', token: await sdk.roomToken('lobby', { send: ['msg'] }) });
    await page.next((f) => f.t === 'joined' && f.ref === 1, 'joined');

    failApps = true;
    skewMs = 5000;
    page.send({ t: 'send', ref: 2, room: 'lobby', event: 'msg', data: 1 });
    expect(await page.next((f) => f.ref === 2, 'the answer to the send')).toEqual({
      t: 'error',
      code: 'unavailable',
      message: expect.any(String),
      ref: 2,
      room: 'lobby',
    });
    page.send({ t: 'join', ref: 3, room: 'other', token: await sdk.roomToken('other') });
    expect(await page.next((f) => f.ref === 3, 'the answer to the join')).toMatchObject({
      t: 'error',
      code: 'unavailable',
      ref: 3,
      room: 'other',
    });

    failApps = false;
    page.send({ t: 'send', ref: 4, room: 'lobby', event: 'msg', data: 2 });
    expect(await page.next((f) => f.ref === 4, 'the answer to the send')).toMatchObject({ t: 'sent', ref: 4 });
  });
});
