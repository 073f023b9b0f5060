// One service node of a cluster bench, in a process of its own: the built server (@realtime/server,
// run `npm run build` first) on the embedded engine, on one Redis or on a Redis Cluster (BENCH_NODE:
// JSON { app or apps: [app], redis?: url, cluster?: [seed urls], prefix? }). Reports its port over IPC, then answers 'cpu' (its own CPU time,
// µs), 'mem' (heap and RSS after GC) and 'pages' (pages open). Exits when the bench goes away.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '@realtime/server';
import { exitOnSignals, watchParent } from './child.mjs';

const { app, apps = [app], redis, cluster, prefix = 'bench:' } = JSON.parse(process.env.BENCH_NODE);
const dataDir = mkdtempSync(join(tmpdir(), 'realtime-bench-node-'));
const cleanup = () => rmSync(dataDir, { recursive: true, force: true });
watchParent(cleanup);
exitOnSignals(cleanup);

const server = await startServer({
  host: '127.0.0.1',
  port: 0,
  dataDir,
  apps,
  logLevel: 'error',
  ...(redis ? { engine: { kind: 'redis', url: redis, prefix } } : {}),
  ...(cluster ? { engine: { kind: 'redis', cluster, prefix } } : {}),
  // Thousands of pages joining at once are a burst of frames from one address, not abuse.
  gateway: { framesPerSecond: 1000, frameBurst: 1000 },
  // Every bench page comes from 127.0.0.1: the per-address cap would refuse them.
  limits: { maxPages: 100_000, maxPagesPerAddress: 100_000, maxPendingHandshakes: 50_000 },
});

process.send({ port: server.port });
process.on('message', (message) => {
  if (message === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send({ cpu: user + system });
  } else if (message === 'mem') {
    global.gc?.();
    global.gc?.();
    const { heapUsed, rss } = process.memoryUsage();
    process.send({ heapUsed, rss });
  } else if (message === 'pages') process.send({ pages: server.pages() });
});
