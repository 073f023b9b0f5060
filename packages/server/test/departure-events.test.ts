import { Realtime } from '@realtime/node';
import { CLOSE } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../src/engines/store-error.js';
import type { WebhookStore } from '../src/engines/types.js';
import type { MemoryEventSink } from '../src/index.js';
import { waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * A webhook event of a page's life that the store refuses (as Redis right after a reconnect, before
 * its generation is confirmed) is not lost: it is tried again until stored, once.
 */

let server: TestServer | undefined;
let sdk: Realtime | undefined;
const pages: RawPage[] = [];
let refusing = false;
/** The event texts the webhook store took, in order. */
const stored: string[] = [];

afterEach(async () => {
  refusing = false;
  stored.length = 0;
  await Promise.all(pages.splice(0).map((p) => p.close()));
  await sdk?.close();
  sdk = undefined;
  await server?.close();
  server = undefined;
});

/** The webhook store, refusing new events while `refusing` is set. */
function refusingEvents(store: WebhookStore): WebhookStore {
  return new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (name !== 'addEvent') return (value as (...a: unknown[]) => unknown).apply(target, args);
        if (refusing) throw new StoreError('unavailable');
        const added = (value as (...a: unknown[]) => unknown).apply(target, args);
        stored.push(String(args[1]));
        return added;
      };
    },
  });
}

describe('webhook events of pages that the store refused', () => {
  it('records the member.left and room.vacated of a page closed with 4100 once the store takes them, once each', async () => {
    server = await startTestServer({
      engine: { kind: 'embedded', asyncStores: process.env.REALTIME_TEST_ENGINE === 'embedded-async' },
      // A receiver that is never reached: the events are stored for it all the same.
      app: { webhook: 'http://127.0.0.1:9/hooks' },
      allowPrivateWebhooks: true,
      departures: { retryMs: 20, retryMaxMs: 50 },
      wrapStores: ({ webhooks }) => ({ webhooks: refusingEvents(webhooks) }),
    });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    const events = server.events as MemoryEventSink;
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken('ann'));
    pages.push(page);
    page.send({ t: 'join', ref: 1, room: 'lobby', token: await sdk.roomToken('lobby', { presence: true }) });
    await page.next((f) => f.t === 'joined', 'joined');
    await waitFor(() => stored.some((e) => e.includes('"member.joined"')), 'member.joined');

    refusing = true;
    expect(server.disconnectUser(server.app.key, 'ann', CLOSE.shutdown)).toBe(1);
    expect((await page.closed).code).toBe(CLOSE.shutdown);
    await waitFor(() => server?.pages() === 0, 'the page to be cleaned up');
    const kinds = () =>
      stored.map((e) => (JSON.parse(e) as { type: string }).type).filter((t) => t !== 'member.joined');
    expect(kinds()).not.toContain('member.left');

    refusing = false;
    await waitFor(() => kinds().includes('room.vacated'), 'room.vacated once the store takes it', 3000);
    // Once each, in the order they happened; the events the tests watch see them once too.
    expect(kinds().filter((t) => t === 'member.left' || t === 'room.vacated')).toEqual(['member.left', 'room.vacated']);
    const watched = events.events.filter((e) => e.event.type === 'member.left' || e.event.type === 'room.vacated');
    expect(watched.map((e) => e.event)).toEqual([
      { type: 'member.left', room: 'lobby', user: 'ann' },
      { type: 'room.vacated', room: 'lobby' },
    ]);
  });
});
