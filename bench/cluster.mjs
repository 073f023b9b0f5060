// npm run bench:cluster — one room's pages spread across service nodes on one Redis, against one
// node alone, side by side in one run with the same load generator (this process: the publisher and
// every page; the nodes and Redis each run in their own process):
//   embedded x1   one node, embedded engine (in-process fan-out, no Redis)
//   redis x1      one node on Redis (every emit goes through the publish script and pub/sub)
//   redis x2      two nodes on one Redis, pages i on node i % 2, emits alternating between nodes
// The same PAGES pages in every system. By default the publisher keeps WINDOW emits in flight (the
// next goes out when one reached every page): each system runs at its saturation pace. With --rate
// it offers a fixed number of emits per second instead (open loop) and measures what arrives.
// Per system: delivered messages/s, latency emit -> page receipt (p50, p99), each node's CPU time per
// delivery it made (process.cpuUsage in the node), Redis CPU per 100k deliveries (INFO CPU), and this
// process's CPU share. CPU per delivery is less what the process spends idle with the pages open
// (measured for 2 s before the load); busy shares are as they are. Then what each configuration
// would deliver if each node had a core of its own (extrapolated from the CPU per delivery measured,
// printed as such).
// Flags: --pages 1000 --seconds 10 --window 16 --rate <emits/s> [--per-node: n nodes get n x rate]
//        --only <name,name> (e.g. 'redis x1,redis x4') --prof <dir> (CPU profiles of the nodes)
// Rooms systems (issue 19; only with --only, or --rooms for both):
//   rooms redis   API emits with history, each into a room drawn at random among --room-count rooms,
//                 through --nodes service nodes, on one Redis
//   rooms cluster the same on a Redis Cluster of --primaries primaries (--replicas each) started here
// Each room has --room-pages pages spread over the nodes. Per system: emits/s, each node's CPU per
// emit, and per redis-server its CPU per emit (INFO CPU, less idle), its part of the Redis CPU, the
// scripts it ran per emit and the rooms it holds; then the cluster against one Redis. By default
// --rate 1000 for these (the same load on both: Redis's cost per emit depends on its pace);
// --rate 0 keeps --window emits in flight instead; --per-primary offers the cluster primaries x the
// rate. --repeat n runs the systems n times, alternating.
//        --room-count 1000 --room-pages 2 --nodes 2 --history 20 --primaries 3 --replicas 0 --repeat 1
//        --apps 1 (room r belongs to app r % apps: each app's rate-limit bucket is one key of its own)
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ask, start, stop } from './cluster/processes.mjs';
import { startRedis } from './cluster/redis.mjs';
import { printRooms, printRoomsSummary, runRooms } from './cluster/rooms.mjs';
import { APP, closeAgents, emit, openPages, payloadOf, roomToken } from './cluster/service.mjs';

const { values: flags } = parseArgs({
  options: {
    pages: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    window: { type: 'string', default: '16' },
    rate: { type: 'string' },
    'per-node': { type: 'boolean', default: false },
    only: { type: 'string' },
    prof: { type: 'string' },
    rooms: { type: 'boolean', default: false },
    'room-count': { type: 'string', default: '1000' },
    'room-pages': { type: 'string', default: '2' },
    apps: { type: 'string', default: '1' },
    nodes: { type: 'string', default: '2' },
    history: { type: 'string', default: '20' },
    primaries: { type: 'string', default: '3' },
    replicas: { type: 'string', default: '0' },
    repeat: { type: 'string', default: '1' },
    'per-primary': { type: 'boolean', default: false },
  },
});
const PAGES = Number(flags.pages);
const SECONDS = Number(flags.seconds);
const WINDOW = Number(flags.window);
const RATE = flags.rate === undefined ? undefined : Number(flags.rate);
// With --per-node, a system of n nodes is offered n x RATE: every node makes as many deliveries a
// second as the one node alone. Each socket then gets n times the events, so writes coalesce more
// than the one node's: on shared cores neither mode is exactly fair, which is why both exist.
const PER_NODE = flags['per-node'];

const DEFAULT_SYSTEMS = ['embedded x1', 'redis x1', 'redis x2'];

/** `embedded x1` or `redis x<n>` (any n: --only 'redis x4' shows Redis's cost per subscribed node). */
function systemOf(name) {
  const match = /^(embedded|redis) x(\d+)$/.exec(name);
  if (!match || (match[1] === 'embedded' && match[2] !== '1')) throw new Error(`unknown system ${name}`);
  return { nodes: Number(match[2]), redis: match[1] === 'redis' };
}

/** `count` nodes on the embedded engine, or on `target`: { redis: url } or { cluster: [seed urls] }. */
async function startNodes(count, target = {}) {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const { child, first } = await start(new URL('./cluster/node.mjs', import.meta.url), {
        // --prof <dir>: a V8 CPU profile of each node, written when it ends.
        execArgv: ['--expose-gc', ...(flags.prof ? ['--cpu-prof', `--cpu-prof-dir=${flags.prof}`] : [])],
        env: { BENCH_NODE: JSON.stringify({ app: APP, ...target }) },
      });
      return { child, port: first.port };
    }),
  );
}

const cpuOf = async (child) => (await ask(child, 'cpu')).cpu;
const ownCpu = () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

async function run(name) {
  const system = systemOf(name);
  const redis = system.redis ? await startRedis() : undefined;
  const nodes = await startNodes(system.nodes, redis ? { redis: redis.url } : {});
  const ports = nodes.map((n) => n.port);
  const token = await roomToken();

  const pending = new Map();
  const histogram = new Uint32Array(500_001); // 10 µs buckets up to 5 s
  const perNode = new Array(nodes.length).fill(0);
  let delivered = 0;
  let measuring = false;
  let seq = 0;
  let publishing = true;
  let failed;
  let emitsMeasured = 0;
  const publishNext = () => {
    if (!publishing) return;
    const s = ++seq;
    pending.set(s, 0);
    if (measuring) emitsMeasured++;
    emit(ports[s % ports.length], payloadOf(s, performance.now())).catch((error) => {
      failed = error;
    });
  };
  const pages = await openPages(ports, PAGES, token, (s, sent, node) => {
    if (measuring) {
      delivered++;
      perNode[node]++;
      histogram[Math.min(500_000, Math.round((performance.now() - sent) * 100))]++;
    }
    const got = (pending.get(s) ?? 0) + 1;
    if (got >= PAGES) {
      pending.delete(s);
      if (RATE === undefined) publishNext();
    } else pending.set(s, got);
  });

  // What the nodes and Redis spend with the pages open and nothing emitted (heartbeats, leases,
  // Redis's cron), per second: subtracted below, so the figures are the cost of the deliveries.
  const idleSeconds = 2;
  const nodeIdleBefore = await Promise.all(nodes.map((n) => cpuOf(n.child)));
  const redisIdleBefore = redis ? await redis.cpu() : 0;
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  const nodeIdle = (await Promise.all(nodes.map((n) => cpuOf(n.child)))).map(
    (c, i) => (c - nodeIdleBefore[i]) / idleSeconds,
  );
  const redisIdle = redis ? ((await redis.cpu()) - redisIdleBefore) / idleSeconds : 0;

  let ticker;
  if (RATE === undefined) for (let i = 0; i < WINDOW; i++) publishNext();
  else {
    const rate = PER_NODE ? RATE * nodes.length : RATE;
    // Open loop: every 5 ms, the emits due by now at RATE per second.
    const began = performance.now();
    let sent = 0;
    ticker = setInterval(() => {
      const due = Math.floor(((performance.now() - began) / 1000) * rate);
      while (sent < due) {
        sent++;
        publishNext();
      }
    }, 5);
  }
  await new Promise((resolve) => setTimeout(resolve, 2000)); // warm-up
  const nodeCpuBefore = await Promise.all(nodes.map((n) => cpuOf(n.child)));
  const redisCpuBefore = redis ? await redis.cpu() : 0;
  const ownBefore = ownCpu();
  measuring = true;
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  measuring = false;
  const elapsed = (performance.now() - started) / 1000;
  const ownAfter = ownCpu();
  const nodeCpuAfter = await Promise.all(nodes.map((n) => cpuOf(n.child)));
  const redisCpuAfter = redis ? await redis.cpu() : 0;
  publishing = false;
  clearInterval(ticker);
  if (failed) throw failed;

  const quantile = (q) => {
    let target = Math.ceil(delivered * q);
    for (let i = 0; i < histogram.length; i++) {
      target -= histogram[i];
      if (target <= 0) return i / 100;
    }
    return Number.NaN;
  };
  const result = {
    nodes: nodes.length,
    rate: delivered / elapsed,
    emits: emitsMeasured / elapsed,
    p50: quantile(0.5),
    p99: quantile(0.99),
    nodeCpu: nodes.map((_, i) => ({
      share: perNode[i] / delivered,
      perDelivery: (nodeCpuAfter[i] - nodeCpuBefore[i] - nodeIdle[i] * elapsed) / perNode[i],
      busy: (nodeCpuAfter[i] - nodeCpuBefore[i]) / (elapsed * 1e6),
    })),
    redisPer100k: redis ? ((redisCpuAfter - redisCpuBefore - redisIdle * elapsed) / delivered) * 100_000 : undefined,
    redisBusy: redis ? (redisCpuAfter - redisCpuBefore) / (elapsed * 1e6) : undefined,
    redisPerEmit: redis ? (redisCpuAfter - redisCpuBefore - redisIdle * elapsed) / (delivered / PAGES) : undefined,
    generatorBusy: (ownAfter - ownBefore) / (elapsed * 1e6),
  };
  for (const page of pages) page.close();
  await new Promise((resolve) => setTimeout(resolve, 200));
  await Promise.all(nodes.map((n) => stop(n.child)));
  if (redis) await stop(redis.keeper);
  return result;
}

/**
 * Extrapolated: deliveries/s of the room when each node has a core of its own and nothing else
 * limits, from the CPU per delivery measured on each node: the busiest node (share / capacity) sets it.
 */
function nodeBound(r) {
  return Math.min(...r.nodeCpu.map((n) => 1e6 / n.perDelivery / n.share));
}

const ROOM_SYSTEMS = ['rooms redis', 'rooms cluster'];
const names = flags.only
  ? flags.only.split(',').map((name) => name.trim())
  : flags.rooms
    ? ROOM_SYSTEMS
    : DEFAULT_SYSTEMS;
const roomOptions = {
  rooms: Number(flags['room-count']),
  roomPages: Number(flags['room-pages']),
  apps: Number(flags.apps),
  nodes: Number(flags.nodes),
  history: Number(flags.history),
  primaries: Number(flags.primaries),
  replicas: Number(flags.replicas),
  seconds: SECONDS,
  window: WINDOW,
  // Both rooms systems at the same pace unless told otherwise (--rate 0: saturation).
  rate: RATE === undefined ? 1000 : RATE === 0 ? undefined : RATE,
};
// With --per-primary, a cluster of k primaries is offered k x the rate: each primary as busy as one Redis.
const roomOptionsOf = (cluster) => ({
  ...roomOptions,
  cluster,
  ...(cluster && flags['per-primary'] && roomOptions.rate !== undefined
    ? { rate: roomOptions.rate * roomOptions.primaries }
    : {}),
});
const results = {};
const roomRuns = [];
for (let round = 0; round < Number(flags.repeat); round++) {
  for (const name of names) {
    if (ROOM_SYSTEMS.includes(name))
      roomRuns.push({
        name,
        result: await runRooms(roomOptionsOf(name === 'rooms cluster'), startNodes),
      });
    else if (round === 0) results[name] = await run(name);
  }
}
closeAgents();
if (roomRuns.length > 0) {
  const { rooms, roomPages, nodes, history, primaries, replicas, rate, apps } = roomOptions;
  console.log(
    `bench:cluster rooms  node ${process.version}, ${cpus().length} cores shared by the load generator, every node and every redis-server; ` +
      `emits into ${rooms} rooms of ${apps} app(s) (a random room each)${history > 0 ? `, kept in history (limit ${history})` : ''}, ${roomPages} pages per room, ` +
      `through ${nodes} node(s), ${rate === undefined ? `${WINDOW} emits in flight (saturation)` : `${rate} emits/s offered${flags['per-primary'] ? ' per primary (the cluster: primaries x that)' : ''}`}, ${SECONDS} s; ` +
      `cluster: ${primaries} primaries, ${replicas} replica(s) each`,
  );
  for (const [i, run] of roomRuns.entries()) {
    console.log(`  -- run ${i + 1}`);
    printRooms(run.name, run.result, roomPages);
  }
  printRoomsSummary(roomRuns, primaries, rooms);
}
if (Object.keys(results).length === 0) process.exit(0);

const load =
  RATE === undefined
    ? `${WINDOW} emits in flight (saturation)`
    : `${RATE} emits/s offered${PER_NODE ? ' per node (n nodes: n x that)' : ''}`;
console.log(
  `bench:cluster  node ${process.version}, ${cpus().length} cores shared by the load generator, every node and Redis; ` +
    `${PAGES} pages in one room, ~100-byte events, ${load}, ${SECONDS} s`,
);
for (const [name, r] of Object.entries(results)) {
  const cpu = r.nodeCpu
    .map(
      (n) =>
        `${n.perDelivery.toFixed(2)} µs (${Math.round(n.share * 100)}% of deliveries, ${Math.round(n.busy * 100)}% busy)`,
    )
    .join(' + ');
  const redisText =
    r.redisPer100k === undefined
      ? ''
      : `   Redis ${(r.redisPer100k / 1000).toFixed(1)} ms CPU per 100k deliveries (${r.redisPerEmit.toFixed(0)} µs per emit, ${Math.round(r.redisBusy * 100)}% busy)`;
  console.log(
    `  ${name.padEnd(12)} ${Math.round(r.rate).toString().padStart(8)} msgs/s  ${Math.round(r.emits).toString().padStart(5)} emits/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`,
  );
  console.log(
    `               node CPU per delivery: ${cpu}${redisText}   load generator ${Math.round(r.generatorBusy * 100)}% busy`,
  );
}
const x1 = results['redis x1'];
const x2 = results['redis x2'];
const embedded = results['embedded x1'];
if (RATE === undefined) {
  if (x2 && x1) console.log(`  redis x2 / redis x1:    ${(x2.rate / x1.rate).toFixed(2)}x msgs/s (goal >= 1.6x)`);
  if (x2 && embedded) console.log(`  redis x2 / embedded x1: ${(x2.rate / embedded.rate).toFixed(2)}x msgs/s`);
  if (x1 && embedded) console.log(`  redis x1 / embedded x1: ${(x1.rate / embedded.rate).toFixed(2)}x msgs/s`);
} else {
  // A fixed offered load: the rates are what was offered, unless a system fell behind.
  for (const [name, r] of Object.entries(results)) {
    const offered = RATE * (PER_NODE ? r.nodes : 1) * PAGES;
    console.log(
      `  ${name.padEnd(12)} delivered ${((r.rate / offered) * 100).toFixed(1)}% of the ${offered} msgs/s offered`,
    );
  }
}
console.log('  extrapolated, each node on a core of its own (from the CPU per delivery above, not measured as such):');
for (const [name, r] of Object.entries(results))
  console.log(`    ${name.padEnd(12)} ${Math.round(nodeBound(r)).toString().padStart(8)} msgs/s node-bound`);
if (x2 && x1) console.log(`    redis x2 / redis x1:    ${(nodeBound(x2) / nodeBound(x1)).toFixed(2)}x`);
if (x2 && embedded) console.log(`    redis x2 / embedded x1: ${(nodeBound(x2) / nodeBound(embedded)).toFixed(2)}x`);
for (const [name, r] of Object.entries(results))
  if (r.redisPerEmit !== undefined)
    console.log(
      `    ${name.padEnd(12)} one Redis core at ${r.redisPerEmit.toFixed(0)} µs per emit: ${Math.round(1e6 / r.redisPerEmit)} emits/s`,
    );
