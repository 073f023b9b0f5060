import { deriveKey, sign } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API, startTestServer, type TestServer } from './helpers.js';
import { openRaw, parseAnswer, type RawSocket } from './raw-sockets.js';

const HEADERS_TIMEOUT_MS = 500;

describe('HTTP guards', () => {
  let server: TestServer;
  const raws: RawSocket[] = [];
  const raw = async (first?: string) => {
    const socket = await openRaw(server.port, first);
    raws.push(socket);
    return socket;
  };

  beforeAll(async () => {
    server = await startTestServer({ limits: { headersTimeoutMs: HEADERS_TIMEOUT_MS } });
  });
  afterAll(async () => {
    for (const socket of raws) socket.socket.destroy();
    await server.close();
  });

  it('answers 408 request_timeout to a request line cut short, once the header timeout passes', async () => {
    const half = await raw('GET /service/realtime/hea');
    // Node's default would take 60 s and more; the configured 0.5 s (checked every 125 ms) is far below 5 s.
    const answer = parseAnswer(await half.closed(5000));
    expect(answer.status).toBe(408);
    expect(answer.head).toMatch(/\r\nConnection: close/i);
    expect(answer.json).toEqual({ ok: false, error: 'request_timeout', message: 'the request did not arrive in time' });
  });

  it('answers 408 to a connection that sends nothing, and to headers that stop coming', async () => {
    const silent = await raw();
    const slow = await raw('POST /service/realtime/emit HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n');
    for (const socket of [silent, slow]) {
      const answer = parseAnswer(await socket.closed(5000));
      expect(answer.status).toBe(408);
      expect(answer.json.error).toBe('request_timeout');
    }
  });

  it('Expect: 100-continue: over 2 MB is refused with 413 and never 100 Continue; 1 KB gets 100 Continue and its answer', async () => {
    const big = await raw(
      `POST ${API}/emit HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3145728\r\nExpect: 100-continue\r\n\r\n`,
    );
    const text = await big.closed(5000);
    expect(text).not.toContain('100 Continue');
    const refused = parseAnswer(text);
    expect(refused.status).toBe(413);
    expect(refused.head).toMatch(/\r\nConnection: close/i);
    expect(refused.json).toMatchObject({ ok: false, error: 'too_large' });

    const path = `${API}/emit`;
    const body = Buffer.from(JSON.stringify({ rooms: ['r'], event: 'e', data: 'x'.repeat(1000) }));
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = sign({ key: deriveKey(server.app.secret, 'publish'), timestamp, method: 'POST', path, body });
    const small = await raw(
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
        `X-Service-Site: ${server.app.key}\r\nX-Service-Timestamp: ${timestamp}\r\nX-Service-Signature: ${signature}\r\n` +
        'Expect: 100-continue\r\n\r\n',
    );
    await small.until('HTTP/1.1 100 Continue\r\n\r\n');
    expect(small.text()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    small.socket.write(body);
    const answered = await small.until('"ok":true');
    expect(answered).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
  });
});
