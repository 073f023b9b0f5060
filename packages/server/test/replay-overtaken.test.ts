import type { Socket } from 'node:net';
import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, post, startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * A page that reads a long replay too slowly while the room's limit drops the events it has not
 * been sent yet cannot get them any more: it is closed with 4200 and, resuming from the last event it
 * got, learns of the gap from `truncated`.
 */
describe('a replay overtaken by the room limit', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const big = 'x'.repeat(500_000);

  beforeAll(async () => {
    // A stall close would also be 4200: it is kept far away so only the overtaking can close the page.
    server = await startTestServer({ gateway: { replayStallMs: 60_000 } });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('closes the page with 4200; its resume from the last event it got is truncated and carries the new events', async () => {
    for (let i = 0; i < 40; i++) {
      const answer = await post(server, `${API}/emit`, {
        rooms: ['r'],
        event: 'big',
        data: { i, big },
        history: { r: [40, 1] },
      });
      expect(answer.status).toBe(200);
    }
    const page = await helloPage(server.url, server.app.key);
    pages.push(page);
    const socket = (page.ws as unknown as { _socket: Socket })._socket;
    page.send({ t: 'join', ref: 1, room: 'r', token: await sdk.roomToken('r'), last: 40 });
    // Once the replay has begun the page stops reading: 20 MB of it cannot all be queued, so the
    // service waits for the page while the emits below overtake it.
    await page.next((f) => f.t === 'event' && f.room === 'r', 'the first replayed event');
    socket.pause();
    for (let i = 0; i < 40; i++) {
      const answer = await post(server, `${API}/emit`, {
        rooms: ['r'],
        event: 'small',
        data: { i },
        history: { r: [40, 1] },
      });
      expect(answer.status).toBe(200);
    }
    socket.resume();
    const closed = await page.closed;
    expect(closed.code).toBe(4200);
    const got = page.frames.filter((f) => f.t === 'event' && f.room === 'r');
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(40);
    expect(got.every((f) => f.event === 'big')).toBe(true);
    const lastId = got.at(-1)?.id as string;

    const again = await helloPage(server.url, server.app.key);
    pages.push(again);
    again.send({ t: 'join', ref: 2, room: 'r', token: await sdk.roomToken('r'), since: lastId });
    const joined = await again.next((f) => f.t === 'joined', 'joined');
    expect(joined).toMatchObject({ room: 'r', truncated: true, replay: 40 });
    const smallOnes = [];
    for (let i = 0; i < 40; i++) smallOnes.push(await again.next((f) => f.t === 'event' && f.room === 'r', 'an event'));
    expect(smallOnes.map((f) => (f.data as { i: number }).i)).toEqual(Array.from({ length: 40 }, (_, i) => i));
  });
});
