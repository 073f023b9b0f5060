// npm run bench:fanout — pages on loopback receiving ~100-byte events from one room, side by side in
// one run: the service, (a) a bare `ws` server that frames once and coalesces writes, (b) Socket.IO 4
// broadcasting to a room. Each server runs in its own process; the pages and the publisher share this
// one, and parse every system's frames the same cheap way. The publisher keeps WINDOW events in flight
// (the next goes out when one has reached every page), so each system runs at its own pace.
// Each system's server CPU time per delivered message (µs) is read from the server process itself
// over the measured window, so it does not depend on the shared client.
// Then heap and RSS per idle page with MEM_PAGES pages open.
// Env: BENCH_PAGES (1000), BENCH_SECONDS (10), BENCH_WINDOW (8), MEM_PAGES (10000), BENCH_ONLY (a name).
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Realtime } from '@realtime/node';
import { deriveKey, sign } from '@realtime/protocol';
import { openLight } from './fanout/light-client.mjs';

const PAGES = Number(process.env.BENCH_PAGES ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 8);
const MEM_PAGES = Number(process.env.MEM_PAGES ?? 10_000);
const app = {
  key: 'bench',
  secret: 'bench-secret-0123456789',
  name: 'bench',
  webhook: '',
  features: ['history'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};
const publishKey = deriveKey(app.secret, 'publish');
const agent = new Agent({ keepAlive: true, maxSockets: WINDOW });

function startChild(script) {
  const child = fork(new URL(`./fanout/${script}`, import.meta.url), [], {
    execArgv: [
      '--expose-gc',
      ...(process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : []),
    ],
    env: { ...process.env, BENCH_APP: JSON.stringify(app) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve) => child.once('message', (m) => resolve({ child, port: m.port })));
}

function ask(child, message) {
  return new Promise((resolve) => {
    child.once('message', resolve);
    child.send(message);
  });
}

function post(port, path, body, headers = {}) {
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
          res.statusCode === 200 ? resolve() : reject(new Error(`publish answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** How each system is reached: the socket URL, what to do on each message, how to publish. */
const SYSTEMS = {
  service: {
    script: 'service.mjs',
    path: `/service/realtime/socket?site=${app.key}`,
    async prepare(port) {
      const sdk = new Realtime({ url: `http://127.0.0.1:${port}`, key: app.key, secret: app.secret });
      this.token = await sdk.roomToken('bench', { expiresIn: 3600 });
      await sdk.close();
    },
    onOpen(ws) {
      ws.send(JSON.stringify({ t: 'hello', v: 1 }));
    },
    onText(ws, text, joined) {
      if (text.startsWith('{"t":"welcome"'))
        ws.send(JSON.stringify({ t: 'join', ref: 1, room: 'bench', token: this.token }));
      else if (text.startsWith('{"t":"joined"')) joined();
      else if (text.startsWith('{"t":"ping"')) ws.send('{"t":"pong"}');
    },
    publish(port, payload) {
      const body = `{"rooms":["bench"],"event":"msg","data":${payload}}`;
      const timestamp = String(Math.floor(Date.now() / 1000));
      const path = '/service/realtime/emit';
      const signature = sign({ key: publishKey, timestamp, method: 'POST', path, body });
      return post(port, path, body, {
        'x-service-site': app.key,
        'x-service-timestamp': timestamp,
        'x-service-signature': signature,
      });
    },
  },
  'raw ws': {
    script: 'raw-ws.mjs',
    path: '/',
    prepare() {},
    onOpen(_ws, joined) {
      joined();
    },
    onText() {},
    publish: (port, payload) => post(port, '/publish', payload),
  },
  'socket.io': {
    script: 'socketio.mjs',
    path: '/socket.io/?EIO=4&transport=websocket',
    prepare() {},
    onOpen() {},
    onText(ws, text, joined) {
      if (text.startsWith('0')) ws.send('40');
      else if (text.startsWith('40')) joined();
      else if (text === '2') ws.send('3');
    },
    publish: (port, payload) => post(port, '/publish', payload),
  },
};

const SEQ = Buffer.from('"bs":');
const SENT = Buffer.from('"bt":');

/** Reads a number written after `key` in a payload, the same way for every system: no JSON parse. */
function readNumber(payload, key) {
  const at = payload.indexOf(key);
  if (at < 0) return Number.NaN;
  let end = at + key.length;
  while (end < payload.length && payload[end] !== 44 && payload[end] !== 125) end++;
  return Number(payload.latin1Slice(at + key.length, end));
}

/** A text frame of the system's own (handshake, ping) starts like this; events carry "bs". */
function isEvent(payload) {
  return payload.indexOf(SEQ) >= 0;
}

async function openPages(system, port, count, onEvent) {
  const pages = [];
  let next = 0;
  async function openOne() {
    let joined;
    const done = new Promise((resolve) => {
      joined = resolve;
    });
    const page = await openLight(port, system.path, (payload, p) => {
      if (isEvent(payload)) onEvent(payload);
      else system.onText(p, payload.toString(), joined);
    });
    pages.push(page);
    system.onOpen(page, joined);
    await done;
  }
  const workers = Array.from({ length: 100 }, async () => {
    while (next < count) {
      next++;
      await openOne();
    }
  });
  await Promise.all(workers);
  return pages;
}

async function closePages(pages) {
  for (const page of pages) page.close();
  await new Promise((resolve) => setTimeout(resolve, 200));
}

const PAD = 'x'.repeat(50);

async function throughput(name) {
  const system = SYSTEMS[name];
  const { child, port } = await startChild(system.script);
  await system.prepare(port);
  const pending = new Map();
  const histogram = new Uint32Array(200_001); // 10 µs buckets up to 2 s
  let delivered = 0;
  let measuring = false;
  let seq = 0;
  let publishing = true;
  let failed;
  const publishNext = () => {
    if (!publishing) return;
    const s = ++seq;
    pending.set(s, 0);
    const payload = `{"bs":${s},"bt":${performance.now().toFixed(3)},"p":"${PAD}"}`;
    system.publish(port, payload).catch((error) => {
      failed = error;
    });
  };
  const sockets = await openPages(system, port, PAGES, (payload) => {
    const s = readNumber(payload, SEQ);
    const sent = readNumber(payload, SENT);
    if (measuring) {
      delivered++;
      histogram[Math.min(200_000, Math.round((performance.now() - sent) * 100))]++;
    }
    const got = (pending.get(s) ?? 0) + 1;
    if (got >= PAGES) {
      pending.delete(s);
      publishNext();
    } else pending.set(s, got);
  });
  for (let i = 0; i < WINDOW; i++) publishNext();
  await new Promise((resolve) => setTimeout(resolve, 2000)); // warm-up
  const cpuBefore = await ask(child, 'cpu');
  measuring = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = await ask(child, 'cpu');
  const counted = delivered;
  publishing = false;
  if (failed) throw failed;
  const quantile = (q) => {
    let target = Math.ceil(delivered * q);
    for (let i = 0; i < histogram.length; i++) {
      target -= histogram[i];
      if (target <= 0) return i / 100;
    }
    return Number.NaN;
  };
  await closePages(sockets);
  child.send('stop');
  return {
    rate: delivered / elapsed,
    p50: quantile(0.5),
    p99: quantile(0.99),
    cpuPerMsg: (cpuAfter.cpu - cpuBefore.cpu) / counted,
  };
}

async function memory(name) {
  const system = SYSTEMS[name];
  const { child, port } = await startChild(system.script);
  await system.prepare(port);
  const before = await ask(child, 'mem');
  const sockets = await openPages(system, port, MEM_PAGES, () => {});
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = await ask(child, 'mem');
  await closePages(sockets);
  child.send('stop');
  return { heap: (after.heapUsed - before.heapUsed) / MEM_PAGES, rss: (after.rss - before.rss) / MEM_PAGES };
}

const names = process.env.BENCH_ONLY ? [process.env.BENCH_ONLY] : Object.keys(SYSTEMS);
const results = {};
for (const name of names) results[name] = { ...(await throughput(name)), ...(await memory(name)) };

console.log(
  `bench:fanout  node ${process.version}, ${cpus().length} cores, ${PAGES} pages in one room, ~100-byte events, ${WINDOW} in flight, ${SECONDS} s`,
);
for (const [name, r] of Object.entries(results)) {
  console.log(
    `  ${name.padEnd(10)} ${Math.round(r.rate).toString().padStart(8)} msgs/s   server CPU ${r.cpuPerMsg.toFixed(2)} µs/msg   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms   idle page (${MEM_PAGES}): heap ${(r.heap / 1024).toFixed(1)} KB, rss ${(r.rss / 1024).toFixed(1)} KB`,
  );
}
if (results.service && results['raw ws'])
  console.log(`  service / raw ws:    ${(results.service.rate / results['raw ws'].rate).toFixed(2)}x (goal >= 0.9x)`);
if (results.service && results['socket.io'])
  console.log(`  service / socket.io: ${(results.service.rate / results['socket.io'].rate).toFixed(2)}x (goal >= 3x)`);
if (results.service && results['raw ws'])
  console.log(
    `  server CPU per msg, service / raw ws:    ${(results.service.cpuPerMsg / results['raw ws'].cpuPerMsg).toFixed(2)}x (goal <= 1.1x)`,
  );
if (results.service && results['socket.io'])
  console.log(
    `  server CPU per msg, service / socket.io: ${(results.service.cpuPerMsg / results['socket.io'].cpuPerMsg).toFixed(2)}x (goal <= 0.33x)`,
  );
if (results.service)
  console.log(`  heap per idle page:  ${(results.service.heap / 1024).toFixed(1)} KB (goal <= 8 KB)`);
agent.destroy();
