// The Socket.IO 4 baseline of bench:join (websocket transport only): the identity token in the
// handshake's auth, checked in a middleware; the room token in a "join" event answered by its ack.
// Both checked with jose (./verify.mjs): Socket.IO stays on the library; the service and raw ws check
// with node:crypto's HMAC.
import { createServer } from 'node:http';
import { Server } from 'socket.io';
import { ready } from '../fanout/child.mjs';
import { verifyToken } from './verify.mjs';

const server = createServer();
const io = new Server(server, { transports: ['websocket'], perMessageDeflate: false, serveClient: false });
io.use(async (socket, next) => {
  const claims = await verifyToken(socket.handshake.auth?.identity);
  if (!claims) return next(new Error('bad identity'));
  socket.data.user = claims.sub;
  next();
});
io.on('connection', (socket) => {
  socket.on('join', async (room, token, ack) => {
    const claims = await verifyToken(token);
    if (!claims || claims.room !== room) return socket.disconnect(true);
    socket.join(room);
    ack('joined');
  });
});
server.listen(0, '127.0.0.1', () => ready(server.address().port));
