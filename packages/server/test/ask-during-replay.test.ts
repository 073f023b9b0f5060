import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * A page's answer to the service's ask is taken at once, not behind the frames before it: a join
 * whose replay waits for the page to read does not hold the answer back (asks module, `atOnce`).
 */
describe('asks: answers ahead of the page queue', () => {
  let server: TestServer;
  let sdk: Realtime;
  const pages: RawPage[] = [];

  beforeAll(async () => {
    // A long stall time: the page is not closed as slow while the test holds its reads back.
    server = await startTestServer({ gateway: { outboxBytes: 256 * 1024, replayStallMs: 60_000 } });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await sdk.close();
    await server.close();
  });

  it('answers an ask while a join before the reply still replays to a page that does not read', async () => {
    // 30 MB kept: far more than the kernel's socket buffers on loopback take, so the replay must wait.
    const big = 'x'.repeat(100_000);
    for (let i = 0; i < 300; i++) {
      await sdk.emit({ rooms: ['long'], event: 'k', data: big, history: { long: [1000, 1] } });
    }
    const page = await helloPage(server.url, server.app.key, await sdk.identityToken('reader'));
    pages.push(page);
    const asked = sdk.ask('reader', { event: 'q', timeout: 15_000 });
    const question = await page.next((f) => f.t === 'ask');
    page.ws.pause();
    page.send({ t: 'join', ref: 1, room: 'long', token: await sdk.roomToken('long'), since: '0-0' });
    page.send({ t: 'reply', ask: question.ask, data: 'yes' });
    // Answered while the page still reads nothing: the join's replay cannot have finished.
    const replies = await asked;
    expect(replies.map((r) => r.data)).toEqual(['yes']);
    expect(page.frames.filter((f) => f.event === 'k').length).toBe(0);
    page.ws.resume();
    await page.next((f) => f.t === 'joined');
  }, 30_000);
});
