import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveKey, sign } from '@realtime/protocol';
import {
  type App,
  MemoryEventSink,
  newApp,
  type RunningServer,
  type ServerOptions,
  startServer,
} from '../src/index.js';
import { startRedis, type TestRedis } from './redis-server.js';
import { startTestRedis } from './test-redis.js';

/** One redis-server per test process for REALTIME_TEST_ENGINE=redis, started on first use. */
let sharedRedis: Promise<TestRedis> | undefined;
/** The Redis Cluster for REALTIME_TEST_ENGINE=redis-cluster (the project's, else one for this file). */
let sharedCluster: Promise<TestRedis> | undefined;

/**
 * The engine the tests run on. REALTIME_TEST_ENGINE=embedded-async makes every store call answer on
 * a later turn (the `async-stores` vitest project), so the networked paths run without Redis;
 * `redis` runs on a real redis-server (the `redis` project), one key prefix per data folder, so a
 * server restarted on the same folder finds its data again; `redis-cluster` the same on a real Redis
 * Cluster (the `redis-cluster` project).
 */
export async function testEngine(dataDir: string): Promise<ServerOptions['engine']> {
  const chosen = process.env.REALTIME_TEST_ENGINE ?? 'embedded';
  if (chosen === 'embedded') return { kind: 'embedded' };
  if (chosen === 'embedded-async') return { kind: 'embedded', asyncStores: true };
  if (chosen === 'redis') {
    sharedRedis ??= startRedis();
    const redis = await sharedRedis;
    return {
      kind: 'redis',
      url: redis.url,
      prefix: `t${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}:`,
    };
  }
  if (chosen === 'redis-cluster') {
    sharedCluster ??= startTestRedis();
    const redis = await sharedCluster;
    if (!redis.cluster) throw new Error('REALTIME_TEST_ENGINE=redis-cluster needs REALTIME_TEST_REDIS=cluster');
    return {
      kind: 'redis',
      cluster: redis.cluster,
      prefix: `t${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}:`,
    };
  }
  throw new Error(`REALTIME_TEST_ENGINE=${chosen} is not an engine the tests know`);
}

export interface TestServer extends RunningServer {
  app: App;
  dataDir: string;
}

/** A real server on 127.0.0.1 and a free port, with one app, in a temp data folder. */
export async function startTestServer(
  options: { app?: Partial<App>; apps?: App[]; now?: () => number } & Partial<ServerOptions> = {},
): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'realtime-test-'));
  const app = newApp({ name: 'test', rateLimit: { perSecond: 100_000, burst: 100_000 }, ...options.app });
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    logLevel: 'silent',
    events: new MemoryEventSink(),
    engine: await testEngine(dataDir),
    ...options,
    apps: [app, ...(options.apps ?? [])],
  });
  return {
    ...server,
    app,
    dataDir,
    close: async () => {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: { ok: boolean; error?: string; message?: string; [key: string]: unknown };
}

export interface RawRequest {
  method?: string;
  path: string;
  body?: string | Buffer;
  /** Extra or replacing headers, as raw [name, value] pairs (so a header may repeat). */
  headers?: [string, string][];
  /** Leave out the signature headers the helper adds. */
  unsigned?: boolean;
  secret?: string;
  site?: string;
  timestamp?: string;
}

/** Sends one request with full control of bytes and headers, signed like a correct client unless told. */
export function send(server: { url: string; app: App }, req: RawRequest): Promise<RawAnswer> {
  const method = req.method ?? (req.body === undefined ? 'GET' : 'POST');
  const body = req.body === undefined ? Buffer.alloc(0) : Buffer.from(req.body);
  const timestamp = req.timestamp ?? String(Math.floor(Date.now() / 1000));
  const headers: [string, string][] = [['Host', new URL(server.url).host]];
  if (!req.unsigned) {
    const key = deriveKey(req.secret ?? server.app.secret, 'publish');
    headers.push(['X-Service-Site', req.site ?? server.app.key]);
    headers.push(['X-Service-Timestamp', timestamp]);
    headers.push(['X-Service-Signature', sign({ key, timestamp, method, path: req.path, body })]);
  }
  if (body.length > 0) headers.push(['Content-Type', 'application/json']);
  // A header given once replaces the helper's own; one given again is sent twice.
  const replaced = new Set<string>();
  for (const [name, value] of req.headers ?? []) {
    const lower = name.toLowerCase();
    const at = headers.findIndex(([n]) => n.toLowerCase() === lower);
    if (at >= 0 && !replaced.has(lower)) headers[at] = [name, value];
    else headers.push([name, value]);
    replaced.add(lower);
  }
  headers.push(['Content-Length', String(body.length)]);
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const r = httpRequest(
      { host: url.hostname, port: url.port, method, path: req.path, headers: headers.flat(), setHost: true },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: RawAnswer['json'];
          try {
            json = JSON.parse(text);
          } catch {
            json = { ok: false, error: '<not json>', message: text };
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}

/** Shorthand: a signed POST of a JSON value. */
export function post(server: { url: string; app: App }, path: string, value: unknown): Promise<RawAnswer> {
  return send(server, { path, body: JSON.stringify(value) });
}

export const API = '/service/realtime';

export interface Plain {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** An unsigned request, as a load balancer or Prometheus sends it. */
export function fetchPlain(
  url: string,
  path: string,
  init: { method?: string; headers?: Record<string, string> } = {},
) {
  const target = new URL(url);
  return new Promise<Plain>((resolve, reject) => {
    const r = httpRequest(
      { host: target.hostname, port: target.port, path, method: init.method ?? 'GET', headers: init.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }),
        );
      },
    );
    r.on('error', reject);
    r.end();
  });
}
