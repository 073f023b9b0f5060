// The baseline of bench:calls: a bare `ws` server that relays the same call frames between sockets
// (the user is the URL's ?user=). It parses each frame and answers as the service does: invite ->
// call.placed to the caller and call.ring to the callee; hangup -> call.ended to both. No tokens,
// no lifecycle store, no webhooks: the floor a signalling server can not go below.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { ready } from '../fanout/child.mjs';

const users = new Map();
const calls = new Map();
let next = 0;
const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false });
wss.on('connection', (ws, req) => {
  const user = new URL(req.url ?? '/', 'http://x').searchParams.get('user') ?? '';
  users.set(user, ws);
  ws.on('close', () => users.get(user) === ws && users.delete(user));
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.t === 'call.invite') {
      const call = `call_${++next}`;
      calls.set(call, { from: user, to: frame.to });
      ws.send(JSON.stringify({ t: 'call.placed', ref: frame.ref, call, ice: [] }));
      users
        .get(frame.to)
        ?.send(JSON.stringify({ t: 'call.ring', call, from: user, media: ['audio', 'video'], ice: [] }));
    } else if (frame.t === 'call.hangup') {
      const known = calls.get(frame.call);
      if (!known) return;
      calls.delete(frame.call);
      const ended = JSON.stringify({ t: 'call.ended', call: frame.call, reason: 'cancelled' });
      users.get(known.from)?.send(ended);
      users.get(known.to)?.send(ended);
    }
  });
});
server.listen(0, '127.0.0.1', () => ready(server.address().port));
