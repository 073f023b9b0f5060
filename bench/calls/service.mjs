// The realtime service for bench:calls (embedded engine), in a process of its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '@realtime/server';
import { ready } from '../fanout/child.mjs';

const app = JSON.parse(process.env.BENCH_APP);
const dataDir = mkdtempSync(join(tmpdir(), 'realtime-calls-'));
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
const server = await startServer({
  host: '127.0.0.1',
  port: 0,
  dataDir,
  apps: [app],
  logLevel: 'warn',
  // A caller page placing calls back to back sends two frames per call, far above a person's pace:
  // the per-page frame budget (100/s) would refuse it, so it is raised for the bench.
  gateway: { framesPerSecond: 100_000, frameBurst: 100_000 },
  // Each pair places its calls back to back, far above the invite bounds of a person: raised likewise.
  calls: {
    invites: {
      perCaller: { perMinute: 1_000_000, burst: 1_000_000 },
      perCallee: { perMinute: 1_000_000, burst: 1_000_000 },
    },
  },
});
ready(server.port);
