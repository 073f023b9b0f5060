import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers.js';

/** A masked client text frame (RFC 6455 section 5.2), as a browser writes it. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ (mask[i % 4] ?? 0)));
  if (payload.length >= 126) throw new Error('short frames only');
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}

/**
 * The hello in the same packet as the upgrade request: the socket is open to the page before the
 * service has read its app (a round trip on a networked store); the hello must still be answered.
 */
describe('a hello sent with the upgrade', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('is answered with welcome, every time', async () => {
    const { port } = new URL(server.url);
    for (let round = 0; round < 20; round++) {
      const socket = connect(Number(port), '127.0.0.1');
      let received = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
      });
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      const upgrade = [
        `GET /service/realtime/socket?site=${server.app.key} HTTP/1.1`,
        `Host: 127.0.0.1:${port}`,
        'Upgrade: websocket',
        'Connection: Upgrade',
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        'Sec-WebSocket-Version: 13',
        '',
        '',
      ].join('\r\n');
      socket.write(Buffer.concat([Buffer.from(upgrade), clientFrame('{"t":"hello","v":1}')]));
      const deadline = Date.now() + 5000;
      while (!received.includes('"t":"welcome"') && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      socket.destroy();
      expect(received.toString('latin1')).toContain('"t":"welcome"');
    }
  });
});
