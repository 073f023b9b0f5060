// The realtime service itself, embedded engine, for bench:fanout.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '@realtime/server';
import { ready } from './child.mjs';

const app = JSON.parse(process.env.BENCH_APP);
const server = await startServer({
  host: '127.0.0.1',
  port: 0,
  dataDir: mkdtempSync(join(tmpdir(), 'realtime-fanout-')),
  apps: [app],
  logLevel: 'warn',
  // 10,000 pages joining at once are a burst of frames from one process, not abuse.
  gateway: { framesPerSecond: 1000, frameBurst: 1000 },
  // Every bench page comes from 127.0.0.1: the per-address cap would refuse them.
  limits: { maxPagesPerAddress: 100_000, maxPendingHandshakes: 50_000 },
});
ready(server.port);
