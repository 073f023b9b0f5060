// Baseline (b) of bench:fanout: Socket.IO 4 broadcasting to a room (websocket transport only).
// POST /publish emits the JSON body to the room as event "msg".
import { createServer } from 'node:http';
import { Server } from 'socket.io';
import { ready } from './child.mjs';

const server = createServer((req, res) => {
  if (req.url !== '/publish') return;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    io.to('bench').emit('msg', JSON.parse(Buffer.concat(chunks).toString()));
    res.end('{"ok":true}');
  });
});
const io = new Server(server, { transports: ['websocket'], perMessageDeflate: false, serveClient: false });
io.on('connection', (socket) => socket.join('bench'));
server.listen(0, '127.0.0.1', () => ready(server.address().port));
