import { CLOSE, reconnectHint } from '@realtime/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';

describe('page gateway: reconnects spread over a window', () => {
  let server: TestServer | undefined;
  const pages: RawPage[] = [];
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await server?.close();
  });

  it("a stopping node's 4100 closes tell each page its own delay within max(1 s, pages / rate)", async () => {
    // 40 pages at 10 reconnects per second: a 4 s window.
    server = await startTestServer({ gateway: { reconnect: { ratePerSecond: 10 } } });
    for (let i = 0; i < 40; i++) pages.push(await helloPage(server.url, server.app.key));
    const closes = pages.map((p) => p.closed);
    await server.close();
    server = undefined;
    const closed = await Promise.all(closes);
    const delays = closed.map(({ code, reason }) => {
      expect(code).toBe(CLOSE.shutdown);
      expect(reason).toMatch(/^the service is stopping; reconnect in \d+ ms$/);
      return reconnectHint(reason);
    });
    for (const delay of delays) {
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(4000);
    }
    // Uniform draws: 40 pages over 4000 ms share very few values, and some land past the first second.
    expect(new Set(delays).size).toBeGreaterThan(20);
    expect(delays.some((delay) => (delay ?? 0) >= 1000)).toBe(true);
  });
});
