// npm run bench:presence — BENCH_MEMBERS (10,000) members joining one presence room, evenly over
// BENCH_SECONDS (60), each a page of its own user: on one node (embedded engine), then on BENCH_NODES
// (3) nodes sharing one Redis (a redis-server started here), pages spread over the nodes.
// Printed per setup: frames and bytes the service sent to pages (all of them: welcome, joined, members,
// $member.* events, pings), p50/p99 of the join answer (join sent -> joined received), how many pages
// ended with the right count and when, and the peak RSS of each server process.
// The servers run in processes of their own (this file, forked); the pages share this one and read
// frames the cheap way (bench/fanout/light-client.mjs): only `joined` is parsed, a `members` frame's
// count is read from its head.
// Env: BENCH_MEMBERS, BENCH_SECONDS, BENCH_NODES, BENCH_ONLY (one | cluster), BUILD first (npm run build).
import { fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Realtime } from '@realtime/node';
import { openLight } from './fanout/light-client.mjs';

const MEMBERS = Number(process.env.BENCH_MEMBERS ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const NODES = Number(process.env.BENCH_NODES ?? 3);
const ONLY = process.env.BENCH_ONLY;
const ROOM = 'stadium';
const SOCKET = '/service/realtime/socket';
const app = {
  key: 'bench',
  secret: 'bench-secret-0123456789',
  name: 'bench',
  webhook: '',
  features: ['history', 'presence'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};

/** A server process: the service with the given engine; answers `rss` and `stop` over IPC. */
async function serve({ engine }) {
  const { startServer } = await import('@realtime/server');
  const dataDir = mkdtempSync(join(tmpdir(), 'realtime-presence-'));
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    apps: [app],
    // Warnings are about the bench's Redis (no persistence): errors only.
    logLevel: 'error',
    ...(engine ? { engine } : {}),
    // Every bench page comes from 127.0.0.1: the per-address cap would refuse them.
    limits: { maxPagesPerAddress: 100_000, maxPendingHandshakes: 50_000 },
  });
  process.send?.({ port: server.port });
  process.on('message', async (message) => {
    if (message === 'rss') process.send?.({ rss: process.memoryUsage().rss });
    if (message === 'stop') {
      await server.close().catch(() => {});
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    }
  });
}

function startNode(engine) {
  const child = fork(new URL(import.meta.url), [], {
    env: { ...process.env, BENCH_PRESENCE_NODE: JSON.stringify({ engine }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, port: m.port, peakRss: 0 }));
    child.once('exit', (code) => reject(new Error(`a server exited with ${code} before listening`)));
  });
}

function rssOf(node) {
  return new Promise((resolve) => {
    const onMessage = (m) => {
      if (m && typeof m.rss === 'number') {
        node.child.off('message', onMessage);
        resolve(m.rss);
      }
    };
    node.child.on('message', onMessage);
    node.child.send('rss');
  });
}

function stopNode(node) {
  return new Promise((resolve) => {
    node.child.once('exit', resolve);
    node.child.send('stop');
  });
}

function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startRedis() {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out.slice(-500)}`)));
  });
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') };
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
const mb = (bytes) => `${(bytes / 1_048_576).toFixed(0)} MB`;

/** One setup: the nodes given, MEMBERS pages joining over SECONDS, until every page counts MEMBERS. */
async function run(name, nodes) {
  const sdk = new Realtime({ url: `http://127.0.0.1:${nodes[0].port}`, key: app.key, secret: app.secret });
  const totals = { frames: 0, bytes: 0, members: 0, events: 0, errors: 0 };
  const latencies = [];
  const pages = [];
  let right = 0;
  const sampler = setInterval(() => {
    for (const node of nodes) void rssOf(node).then((rss) => (node.peakRss = Math.max(node.peakRss, rss)));
  }, 500);

  const onText = (payload, page) => {
    totals.frames++;
    totals.bytes += payload.length;
    const head = payload.toString('latin1', 0, Math.min(payload.length, 64));
    let count = page.count;
    if (head.startsWith('{"t":"members"')) {
      totals.members++;
      const found = /"count":(\d+)/.exec(head);
      if (found) count = Number(found[1]);
    } else if (head.startsWith('{"t":"event"')) {
      if (head.includes('"$member.joined"')) count++;
      else if (head.includes('"$member.left"')) count--;
      totals.events++;
    } else if (head.startsWith('{"t":"ping"')) {
      page.send('{"t":"pong"}');
    } else if (head.startsWith('{"t":"welcome"')) {
      page.joinAt = performance.now();
      page.send(JSON.stringify({ t: 'join', ref: 1, room: ROOM, token: page.token }));
    } else if (head.startsWith('{"t":"joined"')) {
      latencies.push(performance.now() - page.joinAt);
      const joined = JSON.parse(payload.toString());
      count = joined.count ?? joined.members.length;
    } else if (head.startsWith('{"t":"error"')) {
      totals.errors++;
      if (totals.errors <= 5) console.error(`  error frame: ${payload.toString().slice(0, 200)}`);
    }
    if (count !== page.count) {
      if (page.count === MEMBERS) right--;
      if (count === MEMBERS) right++;
      page.count = count;
    }
  };

  // Tokens first: signing is the bench's work, not the service's.
  const tokens = await Promise.all(
    Array.from({ length: MEMBERS }, async (_, i) => ({
      identity: await sdk.identityToken(`u${i}`),
      room: await sdk.roomToken(ROOM, { presence: true }),
    })),
  );
  const started = performance.now();
  const every = (SECONDS * 1000) / MEMBERS;
  for (let i = 0; i < MEMBERS; i++) {
    const due = started + i * every;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const node = nodes[i % nodes.length];
    const { identity, room } = tokens[i];
    const pending = openLight(node.port, `${SOCKET}?site=${app.key}`, onText).then((page) => {
      page.count = -1;
      page.token = room;
      page.send(JSON.stringify({ t: 'hello', v: 1, identity }));
      return page;
    });
    pages.push(pending);
  }
  const open = await Promise.all(pages);
  const joinedAll = performance.now();
  while (latencies.length < MEMBERS && performance.now() - joinedAll < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const answered = performance.now();
  while (right < MEMBERS && performance.now() - answered < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const settled = performance.now();
  clearInterval(sampler);
  for (const node of nodes) node.peakRss = Math.max(node.peakRss, await rssOf(node));
  latencies.sort((a, b) => a - b);
  console.log(`\n${name}: ${MEMBERS} members joining one presence room over ${SECONDS} s`);
  console.log(
    `  joins took ${((joinedAll - started) / 1000).toFixed(1)} s; every page counted ${MEMBERS} ` +
      `${((settled - started) / 1000).toFixed(1)} s after the first join (${right}/${MEMBERS} pages right)`,
  );
  console.log(
    `  frames to pages: ${totals.frames} (${totals.members} members frames, ${totals.events} $member events), ` +
      `${mb(totals.bytes)}; error frames: ${totals.errors}`,
  );
  console.log(
    `  join answer: p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p99 ${percentile(latencies, 0.99).toFixed(1)} ms, ` +
      `max ${(latencies.at(-1) ?? 0).toFixed(1)} ms (${latencies.length} answered)`,
  );
  console.log(`  server peak RSS: ${nodes.map((n) => mb(n.peakRss)).join(', ')}`);
  for (const page of open) page.close();
  await sdk.close();
  return { frames: totals.frames, right };
}

async function main() {
  if (ONLY !== 'cluster') {
    const node = await startNode(undefined);
    try {
      await run('one node (embedded engine)', [node]);
    } finally {
      await stopNode(node);
    }
  }
  if (ONLY !== 'one') {
    const redis = await startRedis();
    const engine = { kind: 'redis', url: redis.url, prefix: `bench-${process.pid}:` };
    const nodes = [];
    try {
      for (let i = 0; i < NODES; i++) nodes.push(await startNode(engine));
      await run(`${NODES} nodes on Redis`, nodes);
    } finally {
      await Promise.all(nodes.map(stopNode));
      redis.stop();
    }
  }
}

if (process.env.BENCH_PRESENCE_NODE) await serve(JSON.parse(process.env.BENCH_PRESENCE_NODE));
else await main();
