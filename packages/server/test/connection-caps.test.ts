import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { readConfig } from '../src/config/config-file.js';
import { startTestServer, type TestServer } from './helpers.js';
import { openRaw, type PageAttempt, pageOnceFree, type RawSocket, tryPage } from './raw-sockets.js';

const FROM_A = { 'X-Forwarded-For': '203.0.113.5' };
const FROM_B = { 'X-Forwarded-For': '198.51.100.7' };

/** What a page attempt came to, without the socket (a failed match prints no WebSocket internals). */
const outcome = (attempt: PageAttempt) => (attempt.ok ? 'welcome' : { status: attempt.status, json: attempt.json });

describe('connection caps', () => {
  let server: TestServer | undefined;
  const pages: PageAttempt[] = [];
  const raws: RawSocket[] = [];

  afterEach(async () => {
    for (const page of pages.splice(0)) if (page.ok) page.ws.terminate();
    for (const raw of raws.splice(0)) raw.socket.destroy();
    await server?.close();
    server = undefined;
  });

  const open = async (headers: Record<string, string> = {}) => {
    if (!server) throw new Error('no server');
    const attempt = await tryPage(server.url, server.app.key, headers);
    pages.push(attempt);
    return attempt;
  };

  it('refuses the page over the per-address cap with 503 and a reason, and lets in another address', async () => {
    server = await startTestServer({ limits: { maxPagesPerAddress: 2, trustProxy: ['127.0.0.1'] } });
    expect(outcome(await open(FROM_A))).toBe('welcome');
    const kept = await open(FROM_A);
    expect(kept.ok).toBe(true);
    expect(outcome(await open(FROM_A))).toEqual({
      status: 503,
      json: { ok: false, error: 'unavailable', message: 'too many pages from this address' },
    });
    // Another client behind the same proxy is its own address.
    expect(outcome(await open(FROM_B))).toBe('welcome');
    // Entries left of the right-most untrusted one are the client's own words: not believed.
    expect(outcome(await open({ 'X-Forwarded-For': '198.51.100.9, 203.0.113.5' }))).toMatchObject({ status: 503 });

    // A closed page gives its slot back.
    if (kept.ok) kept.ws.close();
    pages.push(await pageOnceFree(server.url, server.app.key, FROM_A));
  });

  it('holds a peer without X-Forwarded-For to the per-address cap, page after page', async () => {
    server = await startTestServer({ limits: { maxPagesPerAddress: 2 } });
    expect(outcome(await open())).toBe('welcome');
    const kept = await open();
    expect(kept.ok).toBe(true);
    expect(outcome(await open())).toEqual({
      status: 503,
      json: { ok: false, error: 'unavailable', message: 'too many pages from this address' },
    });
    if (kept.ok) kept.ws.close();
    pages.push(await pageOnceFree(server.url, server.app.key));
    expect(outcome(await open())).toMatchObject({ status: 503 });
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy, and says so in the log', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    server = await startTestServer({ limits: { maxPagesPerAddress: 2 }, logger });
    expect(outcome(await open(FROM_A))).toBe('welcome');
    expect(outcome(await open(FROM_B))).toBe('welcome');
    expect(outcome(await open({ 'X-Forwarded-For': '192.0.2.1' }))).toMatchObject({
      status: 503,
      json: { error: 'unavailable', message: 'too many pages from this address' },
    });
    const warning = lines.map((line) => JSON.parse(line) as { msg: string }).find((l) => l.msg.includes('cap'));
    expect(warning?.msg).toMatch(/127\.0\.0\.1 has 2 pages open.*add it to limits\.trustProxy/);
  });

  it('refuses pages over the total cap whatever their address, until one closes', async () => {
    server = await startTestServer({ limits: { maxPages: 3, trustProxy: ['127.0.0.0/8'] } });
    const first = await open({ 'X-Forwarded-For': '192.0.2.1' });
    expect(first.ok).toBe(true);
    expect((await open({ 'X-Forwarded-For': '192.0.2.2' })).ok).toBe(true);
    expect((await open({ 'X-Forwarded-For': '192.0.2.3' })).ok).toBe(true);
    expect(outcome(await open({ 'X-Forwarded-For': '192.0.2.4' }))).toEqual({
      status: 503,
      json: { ok: false, error: 'unavailable', message: 'the service has too many pages open' },
    });
    if (first.ok) first.ws.close();
    pages.push(await pageOnceFree(server.url, server.app.key, { 'X-Forwarded-For': '192.0.2.4' }));
  });

  it('drops the longest-waiting silent connection over the pending cap, so real clients still get in', async () => {
    server = await startTestServer({ limits: { maxPendingHandshakes: 3 } });
    const port = server.port;
    for (let i = 0; i < 3; i++) raws.push(await openRaw(port));
    const [first, second, third] = raws as [RawSocket, RawSocket, RawSocket];
    // The cap is full: one more connection drops the oldest.
    raws.push(await openRaw(port));
    await first.closed();
    expect(first.text()).toBe('');
    // A real page connects (dropping the next oldest) and, once upgraded, waits no more.
    const page = await open();
    expect(page.ok).toBe(true);
    await second.closed();
    expect(third.isClosed()).toBe(false);
  });

  it('counts a kept-alive connection idle between requests as waiting', async () => {
    server = await startTestServer({ limits: { maxPendingHandshakes: 2 } });
    const idle = await openRaw(server.port, 'GET /service/realtime/health HTTP/1.1\r\nHost: x\r\n\r\n');
    raws.push(idle);
    await idle.until('\r\n\r\n');
    expect(idle.text()).toMatch(/^HTTP\/1\.1 200 /);
    raws.push(await openRaw(server.port));
    expect(idle.isClosed()).toBe(false);
    // Two wait now (the idle one first): a third connection drops the idle one.
    raws.push(await openRaw(server.port));
    await idle.closed();
  });
});

describe('limits in the config file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-limits-'));
  const config = (value: unknown) => {
    const path = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(path, JSON.stringify(value));
    return path;
  };
  const problem = (limits: unknown) => {
    try {
      readConfig(config({ apps: [], limits }), false);
    } catch (error) {
      return (error as Error).message;
    }
    return 'no error';
  };

  it('reads the limits section, and a server started from it applies them', async () => {
    const limits = {
      maxPages: 50,
      maxPagesPerAddress: 1,
      maxPendingHandshakes: 20,
      headersTimeoutMs: 2000,
      trustProxy: ['127.0.0.1', '10.0.0.0/8', '2001:db8::/32'],
    };
    const read = readConfig(config({ apps: [], limits }), false);
    expect(read.limits).toEqual(limits);
    const server = await startTestServer({ ...(read.limits ? { limits: read.limits } : {}) });
    try {
      const first = await tryPage(server.url, server.app.key, FROM_A);
      expect(first.ok).toBe(true);
      expect(outcome(await tryPage(server.url, server.app.key, FROM_A))).toMatchObject({ status: 503 });
      if (first.ok) first.ws.terminate();
    } finally {
      await server.close();
    }
  });

  it('refuses bad limits with one line naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [[], /limits must be an object/],
      [{ maxPages: 0 }, /limits\.maxPages must be a whole number of at least 1/],
      [{ maxPagesPerAddress: 1.5 }, /limits\.maxPagesPerAddress must be a whole number/],
      [{ maxPendingHandshakes: '10' }, /limits\.maxPendingHandshakes must be a whole number/],
      [{ headersTimeoutMs: 50 }, /limits\.headersTimeoutMs must be a whole number of ms from 100 to 60000/],
      [{ headersTimeoutMs: 120_000 }, /limits\.headersTimeoutMs/],
      [{ trustProxy: '10.0.0.0/8' }, /limits\.trustProxy must be an array/],
      [{ trustProxy: ['10.0.0.0/33'] }, /limits\.trustProxy: "10\.0\.0\.0\/33" is not an IP address or CIDR range/],
      [{ trustProxy: ['proxy.local'] }, /limits\.trustProxy: "proxy\.local" is not/],
      [{ maxSockets: 1 }, /limits: unknown field "maxSockets"/],
    ];
    for (const [limits, expected] of cases) {
      const message = problem(limits);
      expect(message).toMatch(expected);
      expect(message).not.toContain('\n');
    }
  });
});
