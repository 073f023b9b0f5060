// What both Redis keepers say to their redis-servers: a free port, and one command at a time over a
// fresh connection (inline RESP), so the keepers need no Redis client.
import { createServer, Socket } from 'node:net';

/** A port free on 127.0.0.1 now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Whether `port` can be listened on at 127.0.0.1 now. */
export function isFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** One command over a fresh connection, inline RESP; resolves with the raw answer text. */
export function command(port, line) {
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
      // A bulk string: "$<len>\r\n<body>\r\n"; a simple answer: "+...\r\n" (or ":n", "-ERR").
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

/** A field of an INFO answer as a number (NaN when absent). */
export function infoField(info, name) {
  return Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
}

/** Redis's own CPU time so far, user + system, in µs (INFO CPU). */
export async function cpuOf(port) {
  const info = await command(port, 'INFO CPU');
  return (infoField(info, 'used_cpu_sys') + infoField(info, 'used_cpu_user')) * 1e6;
}

/** The options every bench redis-server runs with: 127.0.0.1, no persistence, quiet. */
export function serverArgs(port, dir) {
  return [
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
  ];
}

/** Waits, bounded, until redis-server on `port` answers PING. */
export async function answering(port) {
  for (let tries = 0; ; tries++) {
    try {
      if ((await command(port, 'PING')).startsWith('+PONG')) return;
    } catch (error) {
      if (tries > 200) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * What the rooms bench reads of one redis-server: its CPU time (µs), its keys (DBSIZE) and the
 * scripts it ran (EVALSHA and EVAL calls, INFO COMMANDSTATS).
 */
export async function statsOf(port) {
  const [cpu, keys, commands] = await Promise.all([
    cpuOf(port),
    command(port, 'DBSIZE'),
    command(port, 'INFO COMMANDSTATS'),
  ]);
  return {
    port,
    cpu,
    keys: Number(/^:(\d+)/.exec(keys)?.[1] ?? Number.NaN),
    scripts: calls(commands, 'evalsha') + calls(commands, 'eval'),
  };
}

const calls = (commandStats, name) =>
  Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(commandStats)?.[1] ?? 0);
