// The bare baseline of bench:join: a `ws` server where a page sends its identity token, then a room
// token, each checked with node:crypto's HMAC as the service checks them (./verify.mjs), or with jose
// when BENCH_VERIFY=jose (the baseline as the issue first measured it), and answered with one small
// frame; rooms are Sets.
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { ready } from '../fanout/child.mjs';
import { verifyTokenHmac, verifyToken as verifyTokenJose } from './verify.mjs';

const verifyToken = process.env.BENCH_VERIFY === 'jose' ? verifyTokenJose : verifyTokenHmac;

/** Calls `use` with the claims: at once for the HMAC check, once jose's promise settles for jose. */
function check(token, use) {
  const claims = verifyToken(token);
  if (claims instanceof Promise) claims.then(use, () => use(undefined));
  else use(claims);
}

const rooms = new Map();
const server = createServer();
const wss = new WebSocketServer({ server, perMessageDeflate: false, clientTracking: false });
wss.on('connection', (ws) => {
  let user;
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.t === 'hello') {
      check(frame.identity, (claims) => {
        if (!claims) return ws.close(4001);
        user = claims.sub;
        ws.send('{"t":"welcome"}');
      });
    } else if (frame.t === 'join' && user) {
      check(frame.token, (claims) => {
        if (!claims || claims.room !== frame.room) return ws.close(4001);
        const members = rooms.get(frame.room) ?? new Set();
        rooms.set(frame.room, members);
        members.add(ws);
        ws.on('close', () => members.delete(ws));
        ws.send(`{"t":"joined","ref":${frame.ref}}`);
      });
    }
  });
});
server.listen(0, '127.0.0.1', () => ready(server.address().port));
