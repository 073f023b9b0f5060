import { afterEach, describe, expect, it } from 'vitest';
import { DtlsClient } from 'werift';
import { HELLO_VERIFY_REQUEST, handshakesToHandle } from './dtls-hello-verify.js';

type Handshakes = Parameters<DtlsClient['onHandleHandshakes']>[0];

/** A HelloVerifyRequest as werift's client reads it: server version DTLS 1.2, a 4-byte cookie. */
function helloVerifyRequest(): Handshakes {
  const fragment = Buffer.from([0xfe, 0xfd, 4, 1, 2, 3, 4]);
  return [{ msg_type: HELLO_VERIFY_REQUEST, fragment } as unknown as Handshakes[number]];
}

describe("werift's DTLS client, mended", () => {
  const clients: DtlsClient[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  it('keeps to its flight when a HelloVerifyRequest comes again after it answered one', async () => {
    const sent: Buffer[] = [];
    const client = new DtlsClient({
      transport: {
        type: 'test',
        address: {} as never,
        closed: false,
        onData: () => undefined,
        send: async (data) => {
          sent.push(data);
        },
        close: async () => undefined,
      },
    });
    clients.push(client);
    void client.connect().catch(() => undefined);
    await expect.poll(() => sent.length).toBeGreaterThanOrEqual(1);
    // Flight 3 (the ClientHello with the cookie) goes out and waits for the server's answer.
    void client.onHandleHandshakes(helloVerifyRequest());
    await expect.poll(() => client.dtls.flight).toBe(3);
    const before = sent.length;
    // The server answered the ClientHello it got twice: a second HelloVerifyRequest. werift threw
    // here (and the connection failed); now it is let go.
    await expect(client.onHandleHandshakes(helloVerifyRequest())).resolves.toBeUndefined();
    expect(client.dtls.flight).toBe(3);
    // Its own timer still sends the ClientHello with the cookie again.
    await expect.poll(() => sent.length, { timeout: 2_000 }).toBeGreaterThan(before);
  });

  it('lets a HelloVerifyRequest through before flight 3, and every other handshake after', () => {
    const hvr = helloVerifyRequest();
    expect(handshakesToHandle(hvr, 1)).toEqual(hvr);
    expect(handshakesToHandle(hvr, 3)).toEqual([]);
    const serverHello = [{ msg_type: 2 } as unknown as Handshakes[number]];
    expect(handshakesToHandle(serverHello, 3)).toEqual(serverHello);
    expect(handshakesToHandle([...hvr, ...serverHello], 5)).toEqual(serverHello);
  });
});
