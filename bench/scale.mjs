// npm run bench:scale — one room spread across NODES service nodes on one Redis, PAGES pages in all
// (page i on node i % NODES), the pages in page processes of at most the file limit each. Then EMITS
// emits, one at a time, each through the next node: the time from the emit to each page reading it
// (first, p50, p99, last: the goal is every page within 2 s), and each node's heap and RSS per page
// (after GC, against before any page), and Redis's memory per page.
// Everything on 127.0.0.1. `ulimit -n` bounds the pages one process can hold (nodes and page
// processes alike), so the default is NODES x (limit - 100) pages.
// Flags: --nodes 5 --pages <n> --emits 5 --gap 2000 (ms between emits) --concurrency 100 (handshakes
// at a time per page process) --timeout 20000 (ms to wait for every page) --prof <dir> (CPU profiles
// of the nodes) --per-process <n> (fewer pages per process than the file limit allows).
// A smoke run: npm run bench:scale -- --nodes 2 --pages 2000
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { ask, start, stopAll } from './cluster/processes.mjs';
import { startRedis } from './cluster/redis.mjs';
import { APP, closeAgents, emit, payloadOf, roomToken } from './cluster/service.mjs';

/** The soft limit of open files of this process (what its children inherit). */
function fileLimit() {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s+/)[3] ?? 1024);
}
// Room for what a process holds besides pages: listening socket, Redis connections, stdio, epoll.
const SPARE_FILES = 100;
const LIMIT = fileLimit();

const { values: flags } = parseArgs({
  options: {
    nodes: { type: 'string', default: '5' },
    pages: { type: 'string' },
    emits: { type: 'string', default: '5' },
    gap: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '100' },
    timeout: { type: 'string', default: '20000' },
    prof: { type: 'string' },
    'per-process': { type: 'string' },
  },
});
// Pages a process may hold (nodes and page processes); lower it to try many processes in a small run.
const PER_PROCESS = Math.min(LIMIT - SPARE_FILES, Number(flags['per-process'] ?? Number.POSITIVE_INFINITY));
const NODES = Number(flags.nodes);
const PAGES = Number(flags.pages ?? NODES * PER_PROCESS);
const EMITS = Number(flags.emits);
if (Math.ceil(PAGES / NODES) > PER_PROCESS) {
  console.error(
    `${PAGES} pages on ${NODES} nodes is ${Math.ceil(PAGES / NODES)} a node: over ${PER_PROCESS} (ulimit -n ${LIMIT} less ${SPARE_FILES}, or --per-process). Use more nodes.`,
  );
  process.exit(2);
}
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} KB`;

const began = now();
const redis = await startRedis();
const nodes = await Promise.all(
  Array.from({ length: NODES }, async () => {
    const { child, first } = await start(new URL('./cluster/node.mjs', import.meta.url), {
      // --prof <dir>: a V8 CPU profile of each node, written when it ends.
      execArgv: ['--expose-gc', ...(flags.prof ? ['--cpu-prof', `--cpu-prof-dir=${flags.prof}`] : [])],
      env: { BENCH_NODE: JSON.stringify({ app: APP, redis: redis.url }) },
    });
    return { child, port: first.port };
  }),
);
const ports = nodes.map((n) => n.port);
const memBefore = await Promise.all(nodes.map((n) => ask(n.child, 'mem')));
const redisBefore = await redis.memory();
const token = await roomToken();

// Page processes: at most PER_PROCESS pages each, pages spread evenly.
const processes = Math.ceil(PAGES / PER_PROCESS);
const jobs = [];
for (let p = 0, first = 0; p < processes; p++) {
  const count = Math.floor(PAGES / processes) + (p < PAGES % processes ? 1 : 0);
  jobs.push({ ports, first, count, token, concurrency: Number(flags.concurrency) });
  first += count;
}
const redisCpuBefore = await redis.cpu();
const nodeCpuBefore = await Promise.all(nodes.map(async (n) => (await ask(n.child, 'cpu')).cpu));
const opening = now();
const pageProcesses = await Promise.all(
  jobs.map(async (job) => {
    const { child, first } = await start(new URL('./cluster/pages.mjs', import.meta.url), {
      env: { BENCH_PAGES_JOB: JSON.stringify(job) },
    });
    if (first.opened !== job.count) throw new Error(`a page process opened ${first.opened} of ${job.count}`);
    return child;
  }),
);
const openSeconds = (now() - opening) / 1000;
// CPU time per page opened and joined (handshake, token, presence script, subscription), µs.
const redisPerJoin = ((await redis.cpu()) - redisCpuBefore) / PAGES;
const nodeCpuAfter = await Promise.all(nodes.map(async (n) => (await ask(n.child, 'cpu')).cpu));
const nodesPerJoin = nodeCpuAfter.reduce((sum, cpu, i) => sum + cpu - nodeCpuBefore[i], 0) / PAGES;
await sleep(1000);
const memAfter = await Promise.all(nodes.map((n) => ask(n.child, 'mem')));
const pagesOn = await Promise.all(nodes.map(async (n) => (await ask(n.child, 'pages')).pages));
const redisAfter = await redis.memory();

/** Emits one event and gathers every page process's latencies for it (or what came by the timeout). */
async function oneEmit(seq) {
  const reports = [];
  const done = new Promise((resolve) => {
    for (const child of pageProcesses) {
      const listener = (message) => {
        if (message?.seq !== seq) return;
        child.off('message', listener);
        reports.push(message);
        if (reports.length === pageProcesses.length) resolve();
      };
      child.on('message', listener);
    }
  });
  await emit(ports[seq % ports.length], payloadOf(seq, now()));
  const timer = setTimeout(() => {
    for (const child of pageProcesses) child.send({ flush: seq });
  }, Number(flags.timeout));
  await done;
  clearTimeout(timer);
  const latencies = Float64Array.from(reports.flatMap((r) => r.latencies)).sort();
  const missing = reports.reduce((sum, r) => sum + r.missing, 0);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.max(0, Math.ceil(latencies.length * q) - 1))];
  return {
    seq,
    received: latencies.length,
    missing,
    first: latencies[0],
    p50: at(0.5),
    p99: at(0.99),
    last: latencies.at(-1),
  };
}

// A node or page process that dies mid-run ends the bench (and, through processes.mjs, the rest).
let finishing = false;
for (const child of [...nodes.map((n) => n.child), ...pageProcesses]) {
  child.once('exit', (code, signal) => {
    if (finishing) return;
    console.error(`a bench process exited during the run (${code ?? signal})`);
    process.exit(1);
  });
}

const results = [];
for (let seq = 1; seq <= EMITS; seq++) {
  results.push(await oneEmit(seq));
  await sleep(Number(flags.gap));
}

console.log(
  `bench:scale  node ${process.version}, ${cpus().length} cores shared by every node, page process and Redis; ` +
    `${NODES} nodes on one Redis, ${PAGES} pages in one room (${pageProcesses.length} page processes, ulimit -n ${LIMIT}), ~100-byte events`,
);
console.log(
  `  pages opened and joined in ${openSeconds.toFixed(1)} s (${Math.round(PAGES / openSeconds)} a second); ` +
    `CPU per page joined: ${nodesPerJoin.toFixed(0)} µs on its node, ${redisPerJoin.toFixed(0)} µs in Redis`,
);
for (const r of results) {
  const ms = (v) => `${v.toFixed(0)} ms`;
  console.log(
    `  emit ${r.seq} through node ${r.seq % NODES}: ${r.received}/${PAGES} pages` +
      `${r.missing ? ` (${r.missing} MISSING)` : ''}   first ${ms(r.first)}   p50 ${ms(r.p50)}   p99 ${ms(r.p99)}   last ${ms(r.last)}`,
  );
}
const worst = Math.max(...results.map((r) => r.last));
const allThere = results.every((r) => r.missing === 0);
console.log(
  `  slowest page of any emit: ${worst.toFixed(0)} ms; ${allThere ? 'every page got every emit' : 'SOME PAGES MISSED EMITS'} (goal: all within 2000 ms)`,
);
nodes.forEach((_, i) => {
  const heap = memAfter[i].heapUsed - memBefore[i].heapUsed;
  const rss = memAfter[i].rss - memBefore[i].rss;
  console.log(
    `  node ${i}: ${pagesOn[i]} pages   heap ${mb(memAfter[i].heapUsed)} (${kb(heap / pagesOn[i])} a page)   rss ${mb(memAfter[i].rss)} (${kb(rss / pagesOn[i])} a page)`,
  );
});
console.log(`  Redis: ${mb(redisAfter)} used (${kb((redisAfter - redisBefore) / PAGES)} a page)`);
console.log(`  whole run ${((now() - began) / 1000).toFixed(0)} s`);
closeAgents();
finishing = true;
await stopAll();
process.exit(0);
