// Baseline (a) of bench:fanout: a bare `ws` server that frames each message once and writes it to
// every socket, corking each socket for the tick so writes coalesce. POST /publish broadcasts the body.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { ready } from './child.mjs';

const sockets = new Set();
function frame(payload) {
  const length = payload.length;
  const header = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(header + length);
  out[0] = 0x81;
  if (length < 126) out[1] = length;
  else if (length < 65536) {
    out[1] = 126;
    out.writeUInt16BE(length, 2);
  } else {
    out[1] = 127;
    out.writeUInt32BE(0, 2);
    out.writeUInt32BE(length, 6);
  }
  payload.copy(out, header);
  return out;
}
const corked = new Set();
function uncorkAll() {
  for (const socket of corked) socket.uncork();
  corked.clear();
}
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const framed = frame(Buffer.concat(chunks));
    for (const socket of sockets) {
      if (!corked.has(socket)) {
        if (corked.size === 0) process.nextTick(uncorkAll);
        corked.add(socket);
        socket.cork();
      }
      socket.write(framed);
    }
    res.end('{"ok":true}');
  });
});
const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
server.on('upgrade', (req, socket, head) => {
  wss.handleUpgrade(req, socket, head, (ws) => {
    sockets.add(socket);
    ws.on('close', () => sockets.delete(socket));
  });
});
server.listen(0, '127.0.0.1', () => ready(server.address().port));
