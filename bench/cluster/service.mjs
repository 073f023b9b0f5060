// What the cluster benches say to the service: the app, a room token, a page that joins the room,
// and a signed emit. Pages are the minimal clients of bench:fanout (../fanout/light-client.mjs).
import { Agent, request } from 'node:http';
import { Realtime } from '@realtime/node';
import { deriveKey, sign } from '@realtime/protocol';
import { openLight } from '../fanout/light-client.mjs';

export const ROOM = 'bench';
export const APP = {
  key: 'bench',
  secret: 'bench-secret-0123456789',
  name: 'bench',
  webhook: '',
  features: ['history'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};

/** App i of a bench with several apps: app 0 is APP, the others the same plan under other keys. */
export const appOf = (i) =>
  i === 0 ? APP : { ...APP, key: `bench${i}`, secret: `bench-secret-${i}-0123456789`, name: `bench ${i}` };

const publishKeys = new Map();
const publishKeyOf = (app) => {
  let key = publishKeys.get(app.key);
  if (!key) {
    key = deriveKey(app.secret, 'publish');
    publishKeys.set(app.key, key);
  }
  return key;
};
const socketPathOf = (app) => `/service/realtime/socket?site=${app.key}`;

/** A token for ROOM (or each of `rooms`, in order) of `app`, minted locally (no request). */
export async function roomToken(rooms, app = APP) {
  const sdk = new Realtime({ url: 'http://127.0.0.1:1', key: app.key, secret: app.secret });
  const tokens = await Promise.all((rooms ?? [ROOM]).map((room) => sdk.roomToken(room, { expiresIn: 3600 })));
  await sdk.close();
  return rooms ? tokens : tokens[0];
}

const SEQ = Buffer.from('"bs":');
const SENT = Buffer.from('"bt":');

/** Reads a number written after `key` in an event frame, without a JSON parse. */
function readNumber(payload, key) {
  const at = payload.indexOf(key);
  if (at < 0) return Number.NaN;
  let end = at + key.length;
  while (end < payload.length && payload[end] !== 44 && payload[end] !== 125) end++;
  return Number(payload.latin1Slice(at + key.length, end));
}

/** The payload of event `seq`, sent at `sentMs` (any clock its reader shares), about 100 bytes. */
export function payloadOf(seq, sentMs) {
  return `{"bs":${seq},"bt":${sentMs.toFixed(3)},"p":"${'x'.repeat(50)}"}`;
}

/**
 * Opens a page of `app` on the node at `port` and joins `room` (ROOM by default, `token` is its
 * token); resolves once joined. `onEvent(seq, sentMs)` is called for each event of the bench.
 */
export async function openPage(port, token, onEvent, room = ROOM, app = APP) {
  let joined;
  const done = new Promise((resolve) => {
    joined = resolve;
  });
  const page = await openLight(port, socketPathOf(app), (payload, p) => {
    if (payload.indexOf(SEQ) >= 0) {
      onEvent(readNumber(payload, SEQ), readNumber(payload, SENT));
      return;
    }
    const text = payload.toString();
    if (text.startsWith('{"t":"welcome"')) p.send(JSON.stringify({ t: 'join', ref: 1, room, token }));
    else if (text.startsWith('{"t":"joined"')) joined();
    else if (text.startsWith('{"t":"ping"')) p.send('{"t":"pong"}');
    else if (text.startsWith('{"t":"error"')) throw new Error(`the service answered ${text}`);
  });
  page.send(JSON.stringify({ t: 'hello', v: 1 }));
  await done;
  return page;
}

/** Opens `count` pages, page i on ports[i % ports.length], `concurrency` handshakes at a time. */
export async function openPages(ports, count, token, onEvent, concurrency = 100) {
  const pages = [];
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) {
      const i = next++;
      const node = i % ports.length;
      pages.push(await openPage(ports[node], token, (seq, sent) => onEvent(seq, sent, node)));
    }
  });
  await Promise.all(workers);
  return pages;
}

const agents = new Map();

function post(port, path, body, headers) {
  let agent = agents.get(port);
  if (!agent) {
    agent = new Agent({ keepAlive: true, maxSockets: 64 });
    agents.set(port, agent);
  }
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`emit answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A signed emit of `payload` (JSON text) to `room` (ROOM by default) of `app` (APP by default)
 * through the node at `port`; `history` ([limit, hours]) keeps it in the room's history.
 */
export function emit(port, payload, { room = ROOM, history, app = APP } = {}) {
  const kept = history ? `,"history":{"${room}":[${history[0]},${history[1]}]}` : '';
  const body = `{"rooms":["${room}"],"event":"msg","data":${payload}${kept}}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const path = '/service/realtime/emit';
  const signature = sign({ key: publishKeyOf(app), timestamp, method: 'POST', path, body });
  return post(port, path, body, {
    'x-service-site': app.key,
    'x-service-timestamp': timestamp,
    'x-service-signature': signature,
  });
}

export function closeAgents() {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}
