// npm run bench:webhooks — page sends reported by the `emit` webhook to a local receiver that
// verifies every batch with @realtime/node and answers 204. Two phases:
// 1. throughput: PAGES pages each keep IN_FLIGHT sends going; events per second at the receiver;
// 2. latency at a steady RATE below that: receiver arrival minus the event's `at` (same clock).
// Env: PAGES (20), IN_FLIGHT (50), RATE (2000 events/s), BENCH_SECONDS (10 per phase).
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { cpus } from 'node:os';
import { Realtime, verifyWebhook } from '@realtime/node';
import WebSocket from 'ws';

const PAGES = Number(process.env.PAGES ?? 20);
const IN_FLIGHT = Number(process.env.IN_FLIGHT ?? 50);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const RATE = Number(process.env.RATE ?? 2000);
const secret = 'bench-secret-0123456789';

// The receiver first: its address is the app's webhook.
let received = 0;
let receivedTotal = 0;
let acked = 0;
let batches = 0;
let measuring = false;
const histogram = new Uint32Array(100_001); // 1 ms buckets up to 100 s
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const result = verifyWebhook({
      rawBody: Buffer.concat(chunks),
      headers: req.headers,
      path: req.url,
      key: 'bench',
      secret,
    });
    if (!result.ok) {
      res.writeHead(401).end();
      return;
    }
    const now = Date.now();
    for (const event of result.events) if (event.type === 'emit') receivedTotal++;
    if (measuring) {
      batches++;
      for (const event of result.events) {
        if (event.type !== 'emit') continue;
        received++;
        histogram[Math.min(100_000, Math.max(0, now - event.at))]++;
      }
    }
    res.writeHead(204).end();
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const app = {
  key: 'bench',
  secret,
  name: 'bench',
  webhook: `http://127.0.0.1:${receiver.address().port}/hooks`,
  features: ['webhooks'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};

const child = fork(new URL('./webhooks/service.mjs', import.meta.url), [], {
  env: { ...process.env, BENCH_APP: JSON.stringify(app) },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const { port } = await new Promise((resolve) => child.once('message', resolve));
const sdk = new Realtime({ url: `http://127.0.0.1:${port}`, key: app.key, secret });

let mode = 'closed';
let running = true;
async function page(n) {
  const user = `user${n}`;
  const identity = await sdk.identityToken(user);
  const token = await sdk.roomToken('hooks', { send: ['e'], w: ['e'] });
  const ws = new WebSocket(`ws://127.0.0.1:${port}/service/realtime/socket?site=bench`);
  let ref = 0;
  const sendOne = () => {
    if (running) ws.send(`{"t":"send","ref":${++ref},"room":"hooks","event":"e","data":{"n":${ref}}}`);
  };
  ws.sendOne = sendOne;
  await new Promise((resolve, reject) => {
    ws.on('error', reject);
    ws.on('open', () => ws.send(JSON.stringify({ t: 'hello', v: 1, identity })));
    ws.on('message', (data) => {
      const text = data.toString();
      if (text.startsWith('{"t":"welcome"')) ws.send(JSON.stringify({ t: 'join', ref: 0, room: 'hooks', token }));
      else if (text.startsWith('{"t":"joined"')) {
        for (let i = 0; i < IN_FLIGHT; i++) sendOne();
        resolve();
      } else if (text.startsWith('{"t":"sent"')) {
        acked++;
        if (mode === 'closed') sendOne();
      } else if (text.startsWith('{"t":"ping"')) ws.send('{"t":"pong"}');
      else if (text.startsWith('{"t":"error"')) reject(new Error(text));
    });
  });
  return ws;
}

const sockets = await Promise.all(Array.from({ length: PAGES }, (_, i) => page(i)));

async function measure() {
  received = 0;
  batches = 0;
  histogram.fill(0);
  measuring = true;
  const started = Date.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  measuring = false;
  return (Date.now() - started) / 1000;
}

await new Promise((resolve) => setTimeout(resolve, 2000)); // warm-up
const throughputSeconds = await measure();
const throughput = {
  rate: received / throughputSeconds,
  batches: batches / throughputSeconds,
  perBatch: received / Math.max(1, batches),
};

// Phase 2: stop the closed loop, let the backlog drain (bounded wait), then send RATE events per second.
mode = 'open';
const drainBy = Date.now() + 120_000;
while ((receivedTotal < acked || acked === 0) && Date.now() < drainBy)
  await new Promise((resolve) => setTimeout(resolve, 100));
await new Promise((resolve) => setTimeout(resolve, 500));
let next = 0;
const ticker = setInterval(() => {
  for (let i = 0; i < RATE / 100; i++) sockets[next++ % sockets.length].sendOne();
}, 10);
await new Promise((resolve) => setTimeout(resolve, 2000));
const latencySeconds = await measure();
clearInterval(ticker);
const steadyRate = received / latencySeconds;

running = false;
for (const ws of sockets) ws.terminate();
child.send('stop');
await new Promise((resolve) => child.once('exit', resolve));
receiver.close();
await sdk.close();

const quantile = (q) => {
  let target = Math.ceil(received * q);
  for (let i = 0; i < histogram.length; i++) {
    target -= histogram[i];
    if (target <= 0) return i;
  }
  return Number.NaN;
};
console.log(`bench:webhooks  node ${process.version}, ${cpus().length} cores, ${PAGES} pages, ${SECONDS} s per phase`);
console.log(
  `  throughput (${IN_FLIGHT} sends in flight per page): ${Math.round(throughput.rate)} events/s delivered, ${Math.round(throughput.batches)} batches/s, ${throughput.perBatch.toFixed(1)} events per batch`,
);
console.log(
  `  steady ${RATE} events/s offered, ${Math.round(steadyRate)} delivered: added latency event -> receiver p50 ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms`,
);
