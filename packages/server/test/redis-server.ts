/**
 * A real redis-server for tests: its own process, temp folder and free port on 127.0.0.1. Never a
 * mock. `stop`/`restart`/`kill` let a test take Redis away and bring it back (outages, restarts that
 * lose or keep data). The binary is REDIS_SERVER_PATH, else `redis-server` on PATH.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What Redis keeps on disk: nothing (default), RDB snapshots, or an append-only file. */
export type Persistence = 'none' | 'rdb' | 'aof-always' | 'aof-everysec';

export interface RedisServerOptions {
  persistence?: Persistence;
  /** More `--name value` arguments, e.g. `['--maxmemory', '2mb']`. */
  args?: string[];
}

export interface TestRedis {
  url: string;
  /** A Redis Cluster's seed URLs when the tests run on one (REALTIME_TEST_REDIS=cluster). */
  cluster?: string[];
  port: number;
  /** The data folder (RDB/AOF files live here). */
  dir: string;
  /** Stops the server gracefully (a snapshot or AOF is written only if persistence is on). */
  stop(): Promise<void>;
  /**
   * Stops the server if running and starts it again on the same port. `keepData: false` (the
   * default) wipes the data folder first: the restarted Redis is empty, as one without persistence.
   */
  restart(options?: { keepData?: boolean }): Promise<void>;
  /** SIGKILL: no shutdown, nothing saved beyond what was already on disk. */
  kill(): Promise<void>;
  /** Stops the server and removes its folder. */
  close(): Promise<void>;
}

const START_DEADLINE_MS = 10_000;

function persistenceArgs(persistence: Persistence): string[] {
  switch (persistence) {
    case 'none':
      return ['--save', '', '--appendonly', 'no'];
    case 'rdb':
      // Snapshots only when asked (SAVE/shutdown): a test decides what the snapshot holds.
      return ['--save', '', '--appendonly', 'no'];
    case 'aof-always':
      return ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'];
    case 'aof-everysec':
      return ['--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'];
  }
}

/**
 * A watchdog that kills redis-server once this process is gone, however it went: a test worker
 * killed by the runner gets no 'exit' event, and its redis-server would run on forever.
 */
function watchOver(redis: ChildProcess): void {
  if (redis.pid === undefined) return;
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${redis.pid} 2>/dev/null; do sleep 1; done; kill -9 ${redis.pid} 2>/dev/null`;
  const watchdog = spawn('sh', ['-c', script], { stdio: 'ignore', detached: true });
  watchdog.unref();
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** One PING over a plain socket; true when the answer is +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('\r\n')) done(answer.startsWith('+PONG'));
    });
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts a redis-server and answers once it answers PING. */
export async function startRedis(options: RedisServerOptions = {}): Promise<TestRedis> {
  const binary = process.env.REDIS_SERVER_PATH || 'redis-server';
  const dir = mkdtempSync(join(tmpdir(), 'realtime-redis-'));
  let port = await freePort();
  const args = [
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
    '--loglevel',
    'warning',
    ...persistenceArgs(options.persistence ?? 'none'),
    ...(options.args ?? []),
  ];
  let child: ChildProcess | undefined;
  let output = '';

  const start = async (): Promise<void> => {
    output = '';
    const proc = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    watchOver(proc);
    proc.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    proc.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const spawnFailed = new Promise<Error>((resolve) => proc.once('error', resolve));
    const until = Date.now() + START_DEADLINE_MS;
    for (;;) {
      const failure = await Promise.race([
        spawnFailed,
        new Promise<undefined>((r) => setTimeout(() => r(undefined), 20)),
      ]);
      if (failure) throw new Error(`could not start ${binary}: ${failure.message}`);
      if (proc.exitCode !== null) throw new Error(`redis-server exited at start (${proc.exitCode}): ${output}`);
      if (await ping(port)) return;
      if (Date.now() > until) {
        proc.kill('SIGKILL');
        throw new Error(`redis-server did not answer PING on port ${port}: ${output}`);
      }
    }
  };

  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    child = undefined;
    if (!running) return;
    const gone = exited(running);
    running.kill(signal);
    await gone;
  };

  /** Empties the data folder, as a Redis without persistence comes back. */
  const wipe = (): void => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
  };

  const cleanupAtExit = (): void => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupAtExit);

  // The port was free when picked, but another process may take it before redis-server binds it:
  // pick another and start again (bounded).
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      if (attempt >= 5 || !(error instanceof Error) || !error.message.includes('Address already in use')) throw error;
      port = await freePort();
      args[args.indexOf('--port') + 1] = String(port);
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    stop: () => stopWith('SIGTERM'),
    kill: () => stopWith('SIGKILL'),
    restart: async ({ keepData = false } = {}) => {
      await stopWith('SIGTERM');
      if (!keepData) wipe();
      await start();
    },
    close: async () => {
      await stopWith('SIGTERM');
      process.removeListener('exit', cleanupAtExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let prefixes = 0;

/** A key prefix no other test in this process uses, so tests can share one redis-server. */
export function uniquePrefix(name = 't'): string {
  return `test:${process.pid}:${name}${++prefixes}:`;
}

/** Retries `attempt` until it resolves (after an outage or restart), failing after `deadlineMs`. */
export async function untilItWorks<T>(attempt: () => Promise<T>, deadlineMs = 10_000): Promise<T> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

/** Where a test's clients connect: the cluster when the tests run on one, else the one redis-server. */
export function redisTarget(redis: Pick<TestRedis, 'url' | 'cluster'>): { url: string } | { cluster: string[] } {
  return redis.cluster ? { cluster: redis.cluster } : { url: redis.url };
}
