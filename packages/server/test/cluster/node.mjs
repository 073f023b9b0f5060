/**
 * One service node of the cluster tests: the BUILT server (dist) in a process of its own, so a test
 * can kill it with SIGKILL for real. Options come as JSON in REALTIME_CLUSTER_NODE; the node prints
 * `{"url": ...}` as one line on stdout once it listens, logs to stderr, and closes on SIGTERM.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startServer } from '../../dist/index.js';

const {
  name = 'node',
  logLevel = 'warn',
  options = {},
  dataDir: given,
} = JSON.parse(process.env.REALTIME_CLUSTER_NODE ?? '{}');
// The Redis engine keeps nothing here; startServer still wants a folder. The test's harness gives
// one and removes it once this process is gone (a SIGKILL leaves it no time to).
const dataDir = given ?? mkdtempSync(join(tmpdir(), `realtime-${name}-`));
// stdout carries only the URL line; logs go to stderr, which the test keeps for its failure messages.
const logger = pino({ level: logLevel, base: { node: name } }, pino.destination(2));

let server;
try {
  server = await startServer({ host: '127.0.0.1', port: 0, dataDir, logger, drainMs: 1000, ...options });
} catch (error) {
  process.stderr.write(`${name} did not start: ${error instanceof Error ? error.stack : String(error)}\n`);
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
}
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);

let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  server
    .close()
    .catch((error) => process.stderr.write(`${name} closed with an error: ${String(error)}\n`))
    .finally(() => {
      rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
});
