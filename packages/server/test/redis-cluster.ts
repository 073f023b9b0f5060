/**
 * A real Redis Cluster for tests: `primaries` redis-servers with `replicas` replicas each, in one
 * temp folder, on free ports of 127.0.0.1, joined with `redis-cli --cluster create`. Never a mock.
 * The binaries are REDIS_SERVER_PATH / REDIS_CLI_PATH, else redis-cli next to REDIS_SERVER_PATH, else
 * both on PATH. `killPrimary` and `reshard` let a test take a shard away or move its slots.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './redis-server.js';

const run = promisify(execFile);

export interface RedisClusterOptions {
  /** 3 by default (the least `redis-cli --cluster create` accepts). */
  primaries?: number;
  /** Replicas per primary; 1 by default. */
  replicas?: number;
  /** How long a node may be silent before it is failed over; short so failovers take seconds. */
  nodeTimeoutMs?: number;
}

export interface ClusterNode {
  id: string;
  port: number;
  role: 'primary' | 'replica';
  /** Our process for this port (undefined once killed). */
  pid: number | undefined;
  /** Slot ranges owned, inclusive: [[0, 5460]]. Empty for replicas. */
  slots: Array<[number, number]>;
  /** For a replica: its primary's id. */
  primaryId: string | undefined;
}

export interface TestRedisCluster {
  /** One `redis://127.0.0.1:P` per node started (seed URLs). */
  urls: string[];
  ports: number[];
  dir: string;
  /** The live nodes as the cluster sees them (CLUSTER NODES). */
  nodes(): Promise<ClusterNode[]>;
  /** The slot a key hashes to (CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** The primary that owns a slot (or a key's slot). */
  primaryOf(slotOrKey: number | string): Promise<ClusterNode>;
  /**
   * SIGKILLs the primary of a slot (or a key's slot) and waits, bounded, until a replica owns the
   * slot and every live node says cluster_state:ok. Answers the killed node and the new primary.
   */
  killPrimary(slotOrKey: number | string): Promise<{ killed: ClusterNode; promoted: ClusterNode }>;
  /**
   * Moves slots from one primary to another and waits until the cluster is ok: a count moves that
   * many of the source's slots with `redis-cli --cluster reshard`; a list moves exactly those slots
   * (keys included) the way redis-cli does it, one slot at a time.
   */
  reshard(fromPort: number, toPort: number, slots: number | number[]): Promise<void>;
  /** Ends every process by pid and removes the folder. */
  close(): Promise<void>;
}

const START_DEADLINE_MS = 15_000;
const SETTLE_DEADLINE_MS = 30_000;
const SLOTS = 16_384;

function redisCli(): string {
  if (process.env.REDIS_CLI_PATH) return process.env.REDIS_CLI_PATH;
  const server = process.env.REDIS_SERVER_PATH;
  if (server) {
    const beside = join(dirname(server), 'redis-cli');
    if (existsSync(beside)) return beside;
  }
  return 'redis-cli';
}

/** One command through redis-cli; answers its raw output. */
export async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run(redisCli(), ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

/** A free port whose cluster bus port (port + 10000) is free and valid too. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = await freePort();
    if (port + 10_000 > 65_535 || taken.has(port) || taken.has(port + 10_000)) continue;
    const bus = await probeFree(port + 10_000);
    if (!bus) continue;
    taken.add(port);
    taken.add(port + 10_000);
    return port;
  }
  throw new Error('no free port pair for a cluster node');
}

async function probeFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function until<T>(what: string, deadlineMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > end) throw new Error(`redis cluster: ${what} not reached in ${deadlineMs} ms ${last ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Parses CLUSTER NODES: one line per node. */
function parseNodes(text: string, pids: Map<number, ChildProcess>): Array<ClusterNode & { failed: boolean }> {
  const nodes: Array<ClusterNode & { failed: boolean }> = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(' ');
    const [id, address, flags, primary] = fields;
    if (!id || !address || !flags || primary === undefined) continue;
    const port = Number(address.split('@')[0]?.split(':')[1]);
    const slots: Array<[number, number]> = [];
    for (const range of fields.slice(8)) {
      if (range.startsWith('[')) continue; // a slot being migrated, not owned
      const [from, to] = range.split('-').map(Number);
      if (from !== undefined) slots.push([from, to ?? from]);
    }
    const child = pids.get(port);
    nodes.push({
      id,
      port,
      role: flags.includes('master') ? 'primary' : 'replica',
      pid: child && child.exitCode === null && child.signalCode === null ? child.pid : undefined,
      slots,
      primaryId: primary === '-' ? undefined : primary,
      // 'fail' or 'fail?': gone or suspected gone.
      failed: flags.includes('fail'),
    });
  }
  return nodes;
}

const owns = (node: ClusterNode, slot: number) => node.slots.some(([from, to]) => slot >= from && slot <= to);

export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<TestRedisCluster> {
  const primaries = options.primaries ?? 3;
  const replicas = options.replicas ?? 1;
  const binary = process.env.REDIS_SERVER_PATH || 'redis-server';
  const dir = mkdtempSync(join(tmpdir(), 'realtime-redis-cluster-'));
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < primaries * (1 + replicas); i++) ports.push(await clusterPort(taken));
  const children = new Map<number, ChildProcess>();
  const outputs = new Map<number, string>();

  const cleanupAtExit = (): void => {
    for (const child of children.values()) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanupAtExit);

  const close = async (): Promise<void> => {
    const running = [...children.values()];
    await Promise.all(
      running.map((child) => {
        const gone = exited(child);
        child.kill('SIGKILL');
        return gone;
      }),
    );
    process.removeListener('exit', cleanupAtExit);
    rmSync(dir, { recursive: true, force: true });
  };

  const alive = () =>
    ports.filter((port) => {
      const child = children.get(port);
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    });

  const nodesSeenBy = async (port: number) => parseNodes(await cli(port, 'CLUSTER', 'NODES'), children);

  const nodes = async (): Promise<ClusterNode[]> => {
    const [seed] = alive();
    if (seed === undefined) return [];
    return (await nodesSeenBy(seed))
      .filter((node) => !node.failed && alive().includes(node.port))
      .map(({ failed: _failed, ...node }) => node);
  };

  /** Every live node says ok, covers all slots and agrees on who owns each slot range. */
  const settled = async (): Promise<true | undefined> => {
    const views: string[] = [];
    for (const port of alive()) {
      const info = await cli(port, 'CLUSTER', 'INFO');
      if (!info.includes('cluster_state:ok') || !info.includes(`cluster_slots_ok:${SLOTS}`)) return undefined;
      const owners = (await nodesSeenBy(port))
        .filter((node) => node.role === 'primary' && node.slots.length > 0 && !node.failed)
        .map((node) => `${node.port}:${JSON.stringify(node.slots)}`)
        .sort()
        .join(' ');
      views.push(owners);
    }
    return views.every((view) => view === views[0]) ? true : undefined;
  };

  const slotOf = async (key: string) => Number((await cli(alive()[0] ?? 0, 'CLUSTER', 'KEYSLOT', key)).trim());

  const primaryOf = async (slotOrKey: number | string): Promise<ClusterNode> => {
    const slot = typeof slotOrKey === 'number' ? slotOrKey : await slotOf(slotOrKey);
    const owner = (await nodes()).find((node) => node.role === 'primary' && owns(node, slot));
    if (!owner) throw new Error(`redis cluster: no primary owns slot ${slot}`);
    return owner;
  };

  try {
    for (const port of ports) {
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir);
      const child = spawn(
        binary,
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          nodeDir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          String(options.nodeTimeoutMs ?? 1_000),
          // A replica takes over however long its link was down (a test may kill a primary soon).
          '--cluster-replica-validity-factor',
          '0',
          // The other shards keep answering while one fails over (as docs/operations.md advises).
          '--cluster-require-full-coverage',
          'no',
          '--appendonly',
          'no',
          '--save',
          '',
          '--protected-mode',
          'no',
          '--daemonize',
          'no',
          '--loglevel',
          'warning',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.set(port, child);
      outputs.set(port, '');
      const keep = (chunk: Buffer) => outputs.set(port, (outputs.get(port) ?? '') + chunk.toString());
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.once('error', () => undefined);
      watchOver(child);
    }
    for (const port of ports) {
      await until(`node ${port} answering`, START_DEADLINE_MS, async () => {
        const child = children.get(port);
        if (child?.exitCode !== null) throw new Error(`redis-server ${port} exited: ${outputs.get(port)}`);
        return (await cli(port, 'PING')).trim() === 'PONG' ? true : undefined;
      });
    }
    await run(
      redisCli(),
      [
        '--cluster',
        'create',
        ...ports.map((port) => `127.0.0.1:${port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeout: SETTLE_DEADLINE_MS },
    );
    await until('cluster_state:ok on every node', SETTLE_DEADLINE_MS, async () => {
      if (!(await settled())) return undefined;
      // Every replica has found its primary (else a failover could not happen).
      const all = await nodes();
      const ready = all.filter((node) => node.role === 'replica' && node.primaryId !== undefined).length;
      if (ready !== primaries * replicas || all.filter((node) => node.role === 'primary').length !== primaries) {
        return undefined;
      }
      // ...and has synced with it, so it holds the data when it is promoted.
      for (const node of all) {
        if (
          node.role === 'replica' &&
          !(await cli(node.port, 'INFO', 'replication')).includes('master_link_status:up')
        ) {
          return undefined;
        }
      }
      return true;
    });
  } catch (error) {
    await close();
    throw error;
  }

  return {
    urls: ports.map((port) => `redis://127.0.0.1:${port}`),
    ports,
    dir,
    nodes,
    slotOf,
    primaryOf,
    killPrimary: async (slotOrKey) => {
      const slot = typeof slotOrKey === 'number' ? slotOrKey : await slotOf(slotOrKey);
      const killed = await primaryOf(slot);
      const child = children.get(killed.port);
      if (!child) throw new Error(`redis cluster: port ${killed.port} is not ours`);
      const gone = exited(child);
      child.kill('SIGKILL');
      await gone;
      const promoted = await until(`a replica taking slot ${slot}`, SETTLE_DEADLINE_MS, async () => {
        if (!(await settled())) return undefined;
        const owner = (await nodes()).find((node) => node.role === 'primary' && owns(node, slot));
        return owner && owner.port !== killed.port ? owner : undefined;
      });
      // The dead node stays in every node's table as failed, and `redis-cli --cluster` refuses to
      // work on a cluster with a node it cannot reach: every live node forgets it.
      for (const port of alive()) await cli(port, 'CLUSTER', 'FORGET', killed.id);
      return { killed, promoted };
    },
    reshard: async (fromPort, toPort, slots) => {
      const all = await nodes();
      const from = all.find((node) => node.port === fromPort);
      const to = all.find((node) => node.port === toPort);
      if (!from || !to) throw new Error(`redis cluster: no node on ${fromPort} or ${toPort}`);
      if (typeof slots === 'number') {
        await run(
          redisCli(),
          [
            '--cluster',
            'reshard',
            `127.0.0.1:${fromPort}`,
            '--cluster-from',
            from.id,
            '--cluster-to',
            to.id,
            '--cluster-slots',
            String(slots),
            '--cluster-yes',
          ],
          { timeout: SETTLE_DEADLINE_MS },
        );
      } else {
        for (const slot of slots) await moveSlot(slot, from, to, all);
      }
      await until('cluster_state:ok after reshard', SETTLE_DEADLINE_MS, settled);
    },
    close,
  };
}

/** Moves one slot with its keys, in the order redis-cli's reshard uses. */
async function moveSlot(slot: number, from: ClusterNode, to: ClusterNode, all: ClusterNode[]): Promise<void> {
  const s = String(slot);
  await cli(to.port, 'CLUSTER', 'SETSLOT', s, 'IMPORTING', from.id);
  await cli(from.port, 'CLUSTER', 'SETSLOT', s, 'MIGRATING', to.id);
  for (let batch = 0; batch < 10_000; batch++) {
    const keys = (await cli(from.port, 'CLUSTER', 'GETKEYSINSLOT', s, '100')).split('\n').filter(Boolean);
    if (keys.length === 0) break;
    await cli(from.port, 'MIGRATE', '127.0.0.1', String(to.port), '', '0', '5000', 'REPLACE', 'KEYS', ...keys);
  }
  await cli(to.port, 'CLUSTER', 'SETSLOT', s, 'NODE', to.id);
  await cli(from.port, 'CLUSTER', 'SETSLOT', s, 'NODE', to.id);
  for (const node of all) {
    if (node.role === 'primary' && node.port !== from.port && node.port !== to.port) {
      await cli(node.port, 'CLUSTER', 'SETSLOT', s, 'NODE', to.id);
    }
  }
}

/** Kills a node once this process is gone, however it went (as redis-server.ts does). */
function watchOver(redis: ChildProcess): void {
  if (redis.pid === undefined) return;
  const script = `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${redis.pid} 2>/dev/null; do sleep 1; done; kill -9 ${redis.pid} 2>/dev/null`;
  const watchdog = spawn('sh', ['-c', script], { stdio: 'ignore', detached: true });
  watchdog.unref();
}
