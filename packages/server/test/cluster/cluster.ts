/**
 * Several service nodes on one real Redis, each a child process running the built server (see
 * node.mjs), so killing one is a real SIGKILL. Pages, the SDK and webhook receivers stay in the test.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Realtime } from '@realtime/node';
import type { EngineChoice } from '../../src/engines/open-engine.js';
import type { App, ServerOptions } from '../../src/index.js';
import { type RawAnswer, send } from '../helpers.js';
import type { RawPage } from '../pages.js';

const FIXTURE = fileURLToPath(new URL('./node.mjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
const START_DEADLINE_MS = 15_000;
const OUTPUT_KEPT = 32_000;

/** What a node is started with: JSON only, it crosses a process boundary. */
export type NodeOptions = Pick<
  ServerOptions,
  | 'apps'
  | 'nodeLeaseMs'
  | 'offlineDelayMs'
  | 'webhooks'
  | 'allowPrivateWebhooks'
  | 'gateway'
  | 'limits'
  | 'calls'
  | 'streams'
> & { engine: (Extract<EngineChoice, { kind: 'redis' }> & { prefix: string }) | { kind: 'embedded' } };

export interface ClusterNode {
  name: string;
  url: string;
  pid: number;
  /** True while the process runs. */
  alive(): boolean;
  /** The last of what the node wrote to stderr (its logs), for failure messages. */
  output(): string;
  /** SIGKILL: no close, no goodbye to Redis; its lease runs out. */
  kill(): Promise<void>;
  /** SIGTERM: the node closes its pages and storage, then exits. */
  stop(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Starts one node and answers once it printed its URL. */
export async function startNode(name: string, options: NodeOptions): Promise<ClusterNode> {
  if (!existsSync(BUILT)) {
    throw new Error(`${BUILT} is missing: build first (npx tsc -b packages/protocol packages/node packages/server)`);
  }
  // Removed here once the node is gone: a node killed with SIGKILL cannot remove it itself.
  const dataDir = mkdtempSync(join(tmpdir(), `realtime-${name}-`));
  const child = spawn(process.execPath, [FIXTURE], {
    // REALTIME_CLUSTER_LOG=debug shows more of what the nodes do in failure messages.
    env: {
      ...process.env,
      REALTIME_CLUSTER_NODE: JSON.stringify({
        name,
        logLevel: process.env.REALTIME_CLUSTER_LOG ?? 'warn',
        options,
        dataDir,
      }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killAtExit = () => {
    child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', killAtExit);
  void exited(child).then(() => {
    process.removeListener('exit', killAtExit);
    rmSync(dataDir, { recursive: true, force: true });
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_KEPT);
  });
  const url = await new Promise<string>((resolve, reject) => {
    let line = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} printed no URL within ${START_DEADLINE_MS} ms: ${output}`));
    }, START_DEADLINE_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      line += chunk.toString();
      const end = line.indexOf('\n');
      if (end < 0) return;
      clearTimeout(timer);
      try {
        resolve((JSON.parse(line.slice(0, end)) as { url: string }).url);
      } catch {
        reject(new Error(`${name} printed ${line.slice(0, end)}, not its URL`));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited at start (${code ?? signal}): ${output}`));
    });
  });
  return {
    name,
    url,
    pid: child.pid ?? 0,
    alive: () => child.exitCode === null && child.signalCode === null,
    output: () => output,
    kill: async () => {
      const gone = exited(child);
      child.kill('SIGKILL');
      await gone;
    },
    stop: async () => {
      const gone = exited(child);
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}

export interface Cluster {
  nodes: ClusterNode[];
  app: App;
  /** An SDK client talking to node i. */
  sdk(i: number): Realtime;
  /** The node a page number goes to: i % nodes. */
  nodeOf(i: number): ClusterNode;
  close(): Promise<void>;
}

/** `count` nodes (3 by default) on one Redis with one app, started side by side. */
export async function startCluster(
  options: Omit<NodeOptions, 'apps'> & { app: App; count?: number },
): Promise<Cluster> {
  const { app, count = 3, ...rest } = options;
  const nodes = await Promise.all(
    Array.from({ length: count }, (_, i) => startNode(`node${i}`, { ...rest, apps: [app] })),
  );
  const sdks = nodes.map((node) => new Realtime({ url: node.url, key: app.key, secret: app.secret }));
  const at = <T>(list: T[], i: number): T => list[i % list.length] as T;
  return {
    nodes,
    app,
    sdk: (i) => at(sdks, i),
    nodeOf: (i) => at(nodes, i),
    close: async () => {
      await Promise.all(sdks.map((s) => s.close()));
      await Promise.all(nodes.map((n) => (n.alive() ? n.stop() : undefined)));
    },
  };
}

/** A signed request to one node (send() of the helpers, aimed at that node). */
export function nodeRequest(node: ClusterNode, app: App, req: Parameters<typeof send>[1]): ReturnType<typeof send> {
  return send({ url: node.url, app }, req);
}

/** An unsigned GET of an ops path (/health, /ready, /metrics). */
export function opsGet(node: ClusterNode, path: string): Promise<RawAnswer> {
  return send({ url: node.url, app: { key: '', secret: 'unused' } as App }, { path, unsigned: true });
}

/** Pages open on a node, read from its metrics. */
export async function pagesOpen(node: ClusterNode): Promise<number> {
  const answer = await opsGet(node, '/metrics');
  const match = /^realtime_pages_open (\d+)/m.exec(answer.text);
  if (!match) throw new Error(`no realtime_pages_open in the metrics of ${node.name}: ${answer.text.slice(0, 200)}`);
  return Number(match[1]);
}

/** Polls until `test` holds; fails with `what` after `ms`. */
export async function until(test: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Real time for every node's sweep to come round twice more, and a webhook window after: sweeps run
 * every tenth of the lease on timers inside the nodes' own processes, which no test clock reaches, so
 * a report that a second sweeper would make again can only be ruled out by letting them run.
 */
export function sweepRounds(leaseMs: number, webhookWindowMs = 100): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, (2 * leaseMs) / 10 + 2 * webhookWindowMs));
}

/** Orders event ids `<ms>-<seq>` as the service does: by time, then sequence. */
export function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}

export function strictlyRising(ids: string[]): boolean {
  return ids.every((id, i) => i === 0 || compareIds(ids[i - 1] as string, id) < 0);
}

/** The frames of room events `event` in `room` a page got, in arrival order. */
export function eventsOf(page: RawPage, room: string, event?: string): Record<string, unknown>[] {
  return page.frames.filter((f) => f.t === 'event' && f.room === room && (event === undefined || f.event === event));
}

let refs = 0;

/** Joins a room with a token minted by `sdk`; fails unless the answer is `joined`. */
export async function joinRoom(
  page: RawPage,
  sdk: Realtime,
  room: string,
  rules: Parameters<Realtime['roomToken']>[1] = {},
  extra: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const ref = ++refs;
  page.send({ t: 'join', ref, room, token: await sdk.roomToken(room, rules), ...extra });
  const answer = await page.next((f) => f.ref === ref && (f.t === 'joined' || f.t === 'error'), `joined ${room}`);
  if (answer.t !== 'joined') throw new Error(`join ${room} answered ${JSON.stringify(answer)}`);
  return answer;
}

/** Rejects when `work` has not settled within `ms`: a request that hangs fails the test by name. */
export function bounded<T>(work: Promise<T>, what: string, ms = 8000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** How many times each answer came, e.g. `{ '200': 41, '503 unavailable': 7 }`: short failure messages. */
export function tally(answers: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a] = (counts[a] ?? 0) + 1;
  return counts;
}

/** The id of the last room event a page got in `room` (what it would resume from). */
export function lastId(page: RawPage, room: string): string | undefined {
  return eventsOf(page, room)
    .filter((f) => typeof f.id === 'string')
    .at(-1)?.id as string | undefined;
}

/**
 * Waits until a page gets a frame that matches, or is closed: answers 'arrived', or the close code
 * (after a Redis outage the service may close pages with 4100 so that they resume from history).
 */
export async function arrivedOrClosed(
  page: RawPage,
  match: (frame: Record<string, unknown>) => boolean,
  what: string,
  ms = 10_000,
): Promise<'arrived' | number> {
  let code: number | undefined;
  void page.closed.then((c) => {
    code = c.code;
  });
  await until(() => page.frames.some(match) || code !== undefined, what, ms);
  return page.frames.some(match) ? 'arrived' : (code as number);
}
