// A minimal WebSocket client for bench:fanout: one TCP socket, no object per message. With a
// thousand pages in one process the `ws` client would be the bottleneck, not the servers measured.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';

/** Masks and frames one text message, as clients must (RFC 6455 section 5.3). */
function clientFrame(text) {
  const payload = Buffer.from(text);
  const length = payload.length;
  const header = length < 126 ? 2 : 4;
  const out = Buffer.allocUnsafe(header + 4 + length);
  out[0] = 0x81;
  if (length < 126) out[1] = 0x80 | length;
  else {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(length, 2);
  }
  const mask = randomBytes(4);
  mask.copy(out, header);
  for (let i = 0; i < length; i++) out[header + 4 + i] = payload[i] ^ mask[i & 3];
  return out;
}

/**
 * Opens a WebSocket to ws://127.0.0.1:port/path. `onText(payload: Buffer, page)` is called for each
 * text message (a slice of the socket's chunk: read it at once). Resolves with the page once open.
 */
export function openLight(port, path, onText) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const page = {
      socket,
      send: (text) => socket.write(clientFrame(text)),
      close: () => socket.destroy(),
    };
    let upgraded = false;
    let pending = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    socket.on('data', (chunk) => {
      let buf = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) {
          pending = buf;
          return;
        }
        if (!buf.subarray(0, 12).toString().includes('101')) {
          reject(new Error(`upgrade refused: ${buf.subarray(0, end).toString()}`));
          socket.destroy();
          return;
        }
        upgraded = true;
        buf = buf.subarray(end + 4);
        resolve(page);
      }
      let at = 0;
      while (buf.length - at >= 2) {
        const opcode = buf[at] & 0x0f;
        let length = buf[at + 1] & 0x7f;
        let header = 2;
        if (length === 126) {
          if (buf.length - at < 4) break;
          length = buf.readUInt16BE(at + 2);
          header = 4;
        } else if (length === 127) {
          if (buf.length - at < 10) break;
          length = buf.readUInt32BE(at + 6);
          header = 10;
        }
        if (buf.length - at < header + length) break;
        if (opcode === 1) onText(buf.subarray(at + header, at + header + length), page);
        else if (opcode === 9) socket.write(Buffer.from([0x8a, 0x80, 0, 0, 0, 0]));
        at += header + length;
      }
      pending = at === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(at));
    });
  });
}
