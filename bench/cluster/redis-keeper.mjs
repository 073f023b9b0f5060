// A redis-server for a cluster bench, kept by this small process: it starts redis-server on a free
// port of 127.0.0.1 (no persistence, a temp folder), reports the port, answers CPU questions, and
// kills redis-server when the bench ends or goes away (its IPC channel closes), even after a SIGKILL.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitOnSignals, watchParent } from './child.mjs';

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

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** One command over a fresh connection, inline RESP; resolves with the raw answer text. */
function command(port, line) {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let answer = '';
    socket.setTimeout(2000, () => {
      socket.destroy();
      reject(new Error(`redis did not answer ${line}`));
    });
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      // A bulk string: "$<len>\r\n<body>\r\n"; a simple answer: "+...\r\n".
      const header = answer.indexOf('\r\n');
      if (header < 0) return;
      if (answer[0] !== '$' || answer.length >= header + 2 + Number(answer.slice(1, header)) + 2) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.connect(port, '127.0.0.1', () => socket.write(`${line}\r\n`));
  });
}

const port = await freePort();
redis = spawn(
  process.env.REDIS_SERVER_PATH || 'redis-server',
  [
    '--bind',
    '127.0.0.1',
    '--port',
    String(port),
    '--dir',
    dir,
    '--protected-mode',
    'no',
    '--daemonize',
    'no',
    '--save',
    '',
    '--appendonly',
    'no',
    '--loglevel',
    'warning',
    // 100,000 pages on 5 nodes are 10 connections here; room for more benches at once.
    '--maxclients',
    '1000',
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
redis.once('exit', (code, signal) => {
  process.stderr.write(`redis-server exited (${code ?? signal})\n`);
  process.exit(1);
});
for (let tries = 0; ; tries++) {
  try {
    if ((await command(port, 'PING')).startsWith('+PONG')) break;
  } catch (error) {
    if (tries > 200) throw error;
  }
  await new Promise((resolve) => setTimeout(resolve, 25));
}

process.send({ port, pid: redis.pid });
process.on('message', async (message) => {
  // Redis's own CPU time (user + system, µs) from INFO CPU: per delivery over a window.
  if (message === 'cpu') {
    const info = await command(port, 'INFO CPU');
    const read = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
    process.send({ cpu: (read('used_cpu_sys') + read('used_cpu_user')) * 1e6 });
  }
  // Bytes Redis holds (INFO MEMORY used_memory): what the pages cost it.
  if (message === 'mem') {
    const info = await command(port, 'INFO MEMORY');
    process.send({ used: Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? Number.NaN) });
  }
});
