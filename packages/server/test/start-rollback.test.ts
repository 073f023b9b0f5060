/**
 * A start that fails leaves nothing behind: no timer, no socket, no Redis connection. The port is
 * taken, so `listen` (the last component to start) fails after the engine, the services, their
 * leases and timers all started; every one of them must be stopped again.
 */
import { createHook } from 'node:async_hooks';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { createServer, type Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppStore, hashDashboardPassword, newApp, type ServerOptions, startServer } from '../src/index.js';
import { waitFor } from './gateway-tools.js';
import { heldNow, openedSince } from './proc-sockets.js';
import { startRedis, type TestRedis } from './redis-server.js';

/** The async resources that keep something running: timers (ref'd or not), sockets, servers, pipes. */
const LIVE_TYPES = new Set(['Timeout', 'Immediate', 'TCPWRAP', 'TCPSERVERWRAP', 'PIPEWRAP', 'UDPWRAP']);

/**
 * The live resources made from now until `stopRecording()`, as they end: a timer ends when it is
 * cleared (or a timeout has run), a socket when it is closed. Unref'd timers count too, which
 * `process.getActiveResourcesInfo()` leaves out.
 */
class Made {
  readonly #alive = new Map<number, string>();
  #recording = true;
  readonly #hook = createHook({
    init: (id, type) => {
      if (this.#recording && LIVE_TYPES.has(type)) this.#alive.set(id, type);
    },
    destroy: (id) => {
      this.#alive.delete(id);
    },
  }).enable();

  stopRecording(): void {
    this.#recording = false;
  }

  /** What was made and has not ended, by type. */
  alive(): string[] {
    return [...this.#alive.values()].sort();
  }

  close(): void {
    this.#hook.disable();
  }
}

/** Waits (bounded) until `left` lists nothing; on timeout says what is still there. */
async function untilNone(left: () => string[], what: string): Promise<void> {
  await waitFor(() => left().length === 0, what).catch((timedOut: Error) => {
    throw new Error(`${timedOut.message}; still there: ${left().join(', ')}`);
  });
}

/** Counts of `process.getActiveResourcesInfo()` by kind (ref'd timers, handles, requests). */
function activeResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** Kinds of which more are active now than in `before`. */
function moreThan(before: Map<string, number>): string[] {
  const more: string[] = [];
  for (const [kind, count] of activeResources()) {
    if (count > (before.get(kind) ?? 0)) more.push(`${kind} ${count - (before.get(kind) ?? 0)}`);
  }
  return more;
}

/** The connections a redis-server has now (`CLIENT LIST`), this one asking not counted. */
function redisClients(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let answer = '';
    socket.setTimeout(2000, () => {
      socket.destroy();
      reject(new Error('CLIENT LIST did not answer'));
    });
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      // A bulk string: `$<length>\r\n<lines>\r\n`.
      const length = /^\$(\d+)\r\n/.exec(answer);
      if (!length?.[1]) return;
      const start = length[0].length;
      if (answer.length < start + Number(length[1]) + 2) return;
      socket.destroy();
      const lines = answer.slice(start, start + Number(length[1])).split('\n');
      resolve(lines.filter((line) => line.startsWith('id=')).length - 1);
    });
    socket.connect(port, '127.0.0.1', () => socket.write('CLIENT LIST\r\n'));
  });
}

/** Files under `dir` this process holds open (the SQLite file and its journal while the engine is open). */
function openFilesUnder(dir: string): string[] {
  const open: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) open.push(target);
    } catch {
      // closed between the listing and the read
    }
  }
  return open;
}

/** A TCP port on 127.0.0.1 that something else listens on. */
async function takenPort(): Promise<{ port: number; blocker: Server }> {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const address = blocker.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { port: address.port, blocker };
}

let redis: TestRedis | undefined;
let passwordHash = '';

beforeAll(async () => {
  redis = await startRedis();
  passwordHash = await hashDashboardPassword('rollback');
});

afterAll(async () => {
  await redis?.close();
});

const engines: [string, () => ServerOptions['engine']][] = [
  ['embedded', () => ({ kind: 'embedded' })],
  ['embedded, stores answering later', () => ({ kind: 'embedded', asyncStores: true })],
  ['redis', () => ({ kind: 'redis', url: redis?.url ?? '', prefix: `rollback${process.pid}:` })],
];

describe.each(engines)('start and stop leave nothing behind (%s engine)', (name, engine) => {
  const options = (dataDir: string, port: number): ServerOptions => ({
    host: '127.0.0.1',
    port,
    dataDir,
    logLevel: 'silent',
    engine: engine(),
    apps: [newApp({ name: 'rollback' })],
    // What a busy start runs: the dashboard's sampler and a short lease, so their timers are in play.
    dashboard: { passwordHash },
    nodeLeaseMs: 2000,
  });

  it('rejects with an error naming the port and leaves no timer, socket or Redis connection', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'realtime-rollback-'));
    const { port, blocker } = await takenPort();
    try {
      const clientsBefore = name === 'redis' && redis ? await redisClients(redis.port) : 0;
      const heldBefore = heldNow();
      const activeBefore = activeResources();

      const made = new Made();
      try {
        const error = await startServer(options(dataDir, port)).then(
          () => undefined,
          (thrown: NodeJS.ErrnoException) => thrown,
        );
        made.stopRecording();
        expect(error?.code).toBe('EADDRINUSE');
        expect(error?.message).toContain(`127.0.0.1:${port}`);
        await untilNone(() => made.alive(), 'the resources of the failed start to end');
      } finally {
        made.close();
      }
      await untilNone(() => moreThan(activeBefore), 'the active resources to come back to their count before');
      await untilNone(() => openedSince(heldBefore).sockets, 'the sockets of the failed start to close');
      if (name === 'redis' && redis) {
        const port = redis.port;
        await waitFor(async () => (await redisClients(port)) === clientsBefore, 'the Redis connections to close');
      }
      expect(openFilesUnder(dataDir)).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a start that succeeds is stopped as cleanly by close() (so the check above sees real resources)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'realtime-rollback-'));
    try {
      const clientsBefore = name === 'redis' && redis ? await redisClients(redis.port) : 0;
      const heldBefore = heldNow();
      const activeBefore = activeResources();
      const made = new Made();
      try {
        const server = await startServer(options(dataDir, 0));
        made.stopRecording();
        // Timers and the listening socket at least: what the failed start must have undone too.
        expect(made.alive().filter((type) => type === 'Timeout').length).toBeGreaterThan(5);
        expect(made.alive()).toContain('TCPSERVERWRAP');
        if (name === 'redis' && redis) expect(await redisClients(redis.port)).toBeGreaterThan(clientsBefore);
        else expect(openFilesUnder(dataDir).length).toBeGreaterThan(0);
        await server.close();
        await untilNone(() => made.alive(), 'the resources of the stopped server to end');
      } finally {
        made.close();
      }
      await untilNone(() => moreThan(activeBefore), 'the active resources to come back to their count before');
      await untilNone(() => openedSince(heldBefore).sockets, 'the sockets of the server to close');
      if (name === 'redis' && redis) {
        const port = redis.port;
        await waitFor(async () => (await redisClients(port)) === clientsBefore, 'the Redis connections to close');
      }
      expect(openFilesUnder(dataDir)).toEqual([]);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a start that fails before it listens', () => {
  it('a store that refuses the configured apps: the start fails with its error and the engine is closed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'realtime-rollback-'));
    const refused = new Error('the disk is full');
    // The app store as made, but refusing to store an app.
    const refusing = (apps: AppStore): AppStore =>
      new Proxy(apps, {
        get: (target, key) => {
          if (key === 'upsert')
            return () => {
              throw refused;
            };
          const value: unknown = Reflect.get(target, key);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
    const made = new Made();
    try {
      const error = await startServer({
        host: '127.0.0.1',
        port: 0,
        dataDir,
        logLevel: 'silent',
        apps: [newApp({ name: 'refused' })],
        wrapStores: ({ apps }) => ({ apps: refusing(apps) }),
      }).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      made.stopRecording();
      expect(error).toBe(refused);
      await untilNone(() => made.alive(), 'the resources of the failed start to end');
      expect(openFilesUnder(dataDir)).toEqual([]);
    } finally {
      made.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
