// A redis-server for a cluster bench, kept by this small process: it starts redis-server on a free
// port of 127.0.0.1 (no persistence, a temp folder), reports the port, answers CPU questions, and
// kills redis-server when the bench ends or goes away (its IPC channel closes), even after a SIGKILL.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitOnSignals, watchParent } from './child.mjs';
import { answering, command, cpuOf, freePort, serverArgs, statsOf } from './resp.mjs';

const dir = mkdtempSync(join(tmpdir(), 'realtime-bench-redis-'));
let redis;
function cleanup() {
  redis?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
// The nodes end at the same signal: Redis goes half a second later, once they are gone.
watchParent(cleanup, 500);
exitOnSignals(cleanup, 500);
process.once('exit', cleanup);

const port = await freePort();
redis = spawn(process.env.REDIS_SERVER_PATH || 'redis-server', serverArgs(port, dir), {
  stdio: ['ignore', 'ignore', 'inherit'],
});
redis.once('exit', (code, signal) => {
  process.stderr.write(`redis-server exited (${code ?? signal})\n`);
  process.exit(1);
});
await answering(port);

process.send({ port, pid: redis.pid });
process.on('message', async (message) => {
  // Redis's own CPU time (user + system, µs) from INFO CPU: per delivery over a window.
  if (message === 'cpu') process.send({ cpu: await cpuOf(port) });
  // Bytes Redis holds (INFO MEMORY used_memory): what the pages cost it.
  if (message === 'mem') {
    const info = await command(port, 'INFO MEMORY');
    process.send({ used: Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? Number.NaN) });
  }
  // What the rooms bench reads per Redis process (see redis-cluster-keeper.mjs).
  if (message === 'stats') process.send({ stats: [{ ...(await statsOf(port)), pid: redis.pid, role: 'primary' }] });
});
