// The service for bench:webhooks: embedded engine, webhooks to the bench's local receiver.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '@realtime/server';

const app = JSON.parse(process.env.BENCH_APP);
const server = await startServer({
  host: '127.0.0.1',
  port: 0,
  dataDir: mkdtempSync(join(tmpdir(), 'realtime-hooks-')),
  apps: [app],
  logLevel: 'warn',
  // Loopback receiver: the development switch. Pages may send as fast as the bench drives them.
  allowPrivateWebhooks: true,
  gateway: { framesPerSecond: 1_000_000, frameBurst: 1_000_000 },
});
process.send({ port: server.port });
process.on('message', (m) => m === 'stop' && server.close().then(() => process.exit(0)));
