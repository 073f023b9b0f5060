/**
 * Clients of `@realtime/browser` connected to the browser package's scripted fake service, for the
 * hooks' stores: the real SDK on a real socket, the service's frames written by each test. Not the
 * browser package's useFakeService: its clients are of that package's sources, the hooks take the
 * built package's types (classes with private fields do not match across the two).
 */
import { connect, type RealtimeClient } from '@realtime/browser';
import { afterEach, beforeEach } from 'vitest';
import { type FakePage, FakeService, NodeWebSocket } from '../../browser/test/fake-service.js';

export type { FakePage };

const WAIT_MS = 5000;

/** Starts a fake service before each test; `open` connects a client to it, closed after the test. */
export function withFakeService(): { service: () => FakeService; open: () => RealtimeClient } {
  let current: FakeService | undefined;
  const clients: RealtimeClient[] = [];
  beforeEach(async () => {
    current = await FakeService.start();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await current?.stop();
    current = undefined;
  });
  const service = () => {
    if (!current) throw new Error('no fake service outside a test');
    return current;
  };
  return {
    service,
    open: () => {
      // No jitter: a reconnect is at once.
      const client = connect({ url: service().url, site: 'app1', WebSocket: NodeWebSocket, random: () => 0 });
      clients.push(client);
      return client;
    },
  };
}

/** Answers the next join on `page` with `joined` (and `members`, for a presence room); returns the join. */
export async function answerJoin(page: FakePage, members?: { user: string; info?: Record<string, unknown> }[]) {
  const join = await page.next('join');
  page.send({ t: 'joined', ref: join.ref, room: join.room, replay: 0, ...(members ? { members } : {}) });
  return join;
}

/** Resolves once `check` holds, checked now and after each call of the listener `listen` adds. */
export function until(listen: (onChange: () => void) => () => void, check: () => boolean, what: string): Promise<void> {
  if (check()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`waited in vain for ${what}`));
    }, WAIT_MS);
    const off = listen(() => {
      if (!check()) return;
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}
