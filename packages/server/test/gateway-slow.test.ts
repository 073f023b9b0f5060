import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Realtime } from '@realtime/node';
import { CLOSE } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Frame, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, isEvent, type RawPage } from './pages.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Bytes held in Buffers (where a page's queued frames live), after a full collection. */
function buffered(): { arrayBuffers: number; heapUsed: number } {
  gc();
  gc();
  const { arrayBuffers, heapUsed } = process.memoryUsage();
  return { arrayBuffers, heapUsed };
}

const MB = 1_048_576;
const OUTBOX = 512 * 1024;
const EVENT_BYTES = 100_000;
/** 40 MB: far past the 512 KB queue and the few MB the kernel's socket buffers hold. */
const EVENTS = 400;

describe('page gateway: slow consumers', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const join = async (p: RawPage, room: string) => {
    p.send({ t: 'join', ref: 1, room, token: await sdk.roomToken(room) });
    await p.next((f) => f.t === 'joined' && f.room === room, `joined ${room}`);
  };

  beforeAll(async () => {
    // Each frame (~100 KB) must fit in the queue: a single frame larger than outboxBytes closes even a
    // page that reads, so the queue is a few frames deep here.
    server = await startTestServer({ gateway: { outboxBytes: OUTBOX } });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('a page that stops reading is closed with 4200; memory stays bounded; the others keep receiving', async () => {
    const slow = await helloPage(server.url, server.app.key);
    const reader = await helloPage(server.url, server.app.key);
    const elsewhere = await helloPage(server.url, server.app.key);
    pages.push(slow, reader, elsewhere);
    await join(slow, 'feed');
    await join(reader, 'feed');
    await join(elsewhere, 'other');
    const openPages = server.pages();
    expect(openPages).toBe(3);

    // The slow page stops reading its socket: the kernel buffers fill, then the service's queue.
    slow.ws.pause();
    const before = buffered();
    const padding = 'x'.repeat(EVENT_BYTES);
    for (let i = 0; i < EVENTS; i++) {
      await sdk.emit({ rooms: ['feed'], event: 'big', data: { i, padding } });
      if (i % 100 === 0) await sdk.emit({ rooms: ['other'], event: 'small', data: i });
    }
    await waitFor(
      () => reader.frames.filter(isEvent('big', 'feed')).length === EVENTS,
      'the reader to get every event',
    );
    // The reader got all of them, in order.
    const got = reader.frames.filter(isEvent('big', 'feed'));
    expect(got.map((f) => (f.data as { i: number }).i)).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
    // Drop the test's own copies of the data before measuring the service.
    for (const f of got) (f.data as Frame).padding = '';
    await waitFor(() => elsewhere.frames.filter(isEvent('small', 'other')).length === 4, 'the other room');

    // 40 MB went to the slow page's room. What the service still holds for it is at most its queue.
    const after = buffered();
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(8 * MB);
    expect(after.heapUsed - before.heapUsed).toBeLessThan(16 * MB);

    // Reading again, the page gets what was queued before the cut, then the close.
    slow.ws.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(CLOSE.slowConsumer);
    const slowGot = slow.frames.filter(isEvent('big', 'feed')).map((f) => (f.data as { i: number }).i);
    expect(slowGot.length).toBeLessThan(EVENTS / 2);
    // A prefix, with no hole: frames are never skipped, the page is cut off instead.
    expect(slowGot).toEqual(Array.from({ length: slowGot.length }, (_, i) => i));
    await waitFor(() => server.pages() === openPages - 1, 'the service to drop the slow page');

    // The others go on.
    await sdk.emit({ rooms: ['feed', 'other'], event: 'after', data: 1 });
    await reader.next(isEvent('after', 'feed'));
    await elsewhere.next(isEvent('after', 'other'));
    expect(reader.ws.readyState).toBe(reader.ws.OPEN);
  });

  it('a page that reads keeps up with the same load and is not closed', async () => {
    const p = await helloPage(server.url, server.app.key);
    pages.push(p);
    await join(p, 'steady');
    const padding = 'y'.repeat(EVENT_BYTES);
    for (let i = 0; i < 100; i++) await sdk.emit({ rooms: ['steady'], event: 'big', data: { i, padding } });
    await waitFor(() => p.frames.filter(isEvent('big', 'steady')).length === 100, 'every event');
    p.send({ t: 'ping' });
    await p.next((f) => f.t === 'pong');
    expect(p.ws.readyState).toBe(p.ws.OPEN);
  });
});
