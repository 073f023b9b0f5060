#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { FEATURES, type Feature, isFeature } from '@realtime/protocol';
import { APP_KEY_PATTERN } from './apps/defaults.js';
import { developmentAppBanner } from './apps/development-app.js';
import { newApp } from './apps/generate.js';
import {
  activeRotation,
  parseOverlap,
  retireSecret,
  rotateSecret,
  rotationView,
  setWebhookSigner,
} from './apps/secret-rotation.js';
import { callOptions, splitList } from './config/calls-config.js';
import { type ConfigFile, readConfig } from './config/config-file.js';
import { type FlagTypes, type FlagValues, withEnv } from './config/env-flags.js';
import { hashDashboardPassword, parsePasswordHash } from './config/password-hash.js';
import { streamOptions, unreachableStreamsWarning } from './config/streams-config.js';
import { UsageError } from './config/usage-error.js';
import { checkWebhookUrl } from './config/webhook-url.js';
import { type AppStoreChoice, type OpenedApps, openAppStore } from './engines/open-apps.js';
import type { EngineChoice } from './engines/open-engine.js';
import { RedisConfigRefused } from './engines/redis/config-check.js';
import { StoreError } from './engines/store-error.js';
import type { App, AppStore, WebhookSigner } from './engines/types.js';
import { handleStopSignals } from './lifecycle/stop-signals.js';
import { type RunningServer, type ServerOptions, startServer } from './lifecycle.js';
import type { LogLevel } from './log.js';

const USAGE = `Usage:
  realtime serve [--host H] [--port P] [STORE] [--config FILE] [--allow-private-webhooks] [--log-level L]
                [--stun URL] [--turn URL --turn-secret S] [--media-address IP] [--media-ports MIN-MAX]
                [--dashboard-password-hash-file FILE | --dashboard-password-hash HASH]
  realtime apps create [--name N] [--key K] [--features a,b] [--webhook URL] [STORE] [--allow-private-webhooks] [--json]
  realtime apps list [STORE] [--json]
  realtime apps show KEY [--secret] [STORE] [--json]
  realtime apps rotate-secret KEY [--overlap 0|90s|30m|24h|7d] [--sign-webhooks new|old] [STORE]
  realtime apps retire-secret KEY [STORE]
  realtime apps sign-webhooks KEY new|old [STORE]
  realtime apps set-webhook KEY URL|"" [STORE] [--allow-private-webhooks]
  realtime keygen
  realtime dashboard-password   (reads the password on stdin, prints its hash for --dashboard-password-hash-file)

STORE is where everything is kept: --data DIR (the embedded engine: one process, a SQLite file in
DIR, default ./data), --redis redis://HOST:PORT (the Redis engine: any number of servers on one Redis)
or --redis-cluster redis://HOST1:PORT,redis://HOST2:PORT,... (the same on a Redis Cluster: its seed nodes).

rotate-secret gives an app a new secret. With --overlap (at most 30d; default 0: the old secret stops
at once, for a leaked one) the old secret is still accepted for that long, or until retire-secret;
webhooks are signed with the new one (--sign-webhooks old: the old one) and carry the other's
signature in X-Service-Signature-Other. See docs/operations.md, "Rotating a secret".

--stun and --turn (each repeatable or comma-separated: stun:HOST:PORT, turn:HOST:PORT?transport=udp,
turns:HOST:PORT) are the servers call pages get; TURN credentials are signed with --turn-secret, the
TURN server's static-auth-secret (better in REALTIME_TURN_SECRET or the config file: ps shows flags).

--media-address (repeatable or comma-separated IP addresses, default 127.0.0.1: this machine only) is
where browsers reach the forwarding units of live streams; --media-ports MIN-MAX the UDP ports they
bind (ports 1024 to 65535; open them to browsers in the firewall).

--dashboard-password-hash-file FILE turns the dashboard on with the hash in FILE (one line, as
realtime dashboard-password prints it). The hash is a secret too: prefer the file or
REALTIME_DASHBOARD_PASSWORD_HASH to --dashboard-password-hash (ps shows flags).

Every flag of serve may come from the environment instead (flags win): REALTIME_HOST, REALTIME_PORT,
REALTIME_DATA, REALTIME_REDIS, REALTIME_REDIS_CLUSTER, REALTIME_CONFIG, REALTIME_ALLOW_PRIVATE_WEBHOOKS (1 or 0), REALTIME_LOG_LEVEL,
REALTIME_STUN, REALTIME_TURN, REALTIME_TURN_SECRET, REALTIME_MEDIA_ADDRESS, REALTIME_MEDIA_PORTS,
REALTIME_DASHBOARD_PASSWORD_HASH, REALTIME_DASHBOARD_PASSWORD_HASH_FILE.
The apps commands read REALTIME_DATA, REALTIME_REDIS and REALTIME_REDIS_CLUSTER, and create and set-webhook
REALTIME_ALLOW_PRIVATE_WEBHOOKS.`;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Flags = FlagTypes;
type Values = FlagValues;

/** Flags that the apps commands also take from the environment, like serve does. */
const SHARED_ENV = ['data', 'redis', 'redis-cluster', 'allow-private-webhooks'];

/** The command could not do its work (port taken, data folder unusable): one line, exit 1. */
class Failure extends Error {}

/** One short line for a parseArgs refusal (Node's own messages run over several lines). */
function argsProblem(error: Error): string {
  const text = error.message;
  const unknown = /^Unknown option '([^']+)'/.exec(text);
  if (unknown) return `unknown option ${unknown[1]}`;
  const noValue = /^Option '(-[^' ]+)[^']*' argument (?:missing|is ambiguous)/.exec(text);
  if (noValue) return `${noValue[1]} needs a value (write ${noValue[1]}=VALUE for a value starting with -)`;
  return text.split('\n')[0] || 'bad arguments';
}

/** Parses the command line; flags named in `env` left out of it come from their REALTIME_* variables. */
function parse(args: string[], options: Flags, positionals: number, env: readonly string[] = []) {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(argsProblem(error as Error));
  }
  if (parsed.positionals.length > positionals) {
    throw new UsageError(`unexpected argument ${JSON.stringify(parsed.positionals[positionals])}`);
  }
  const { values, source } = withEnv(
    parsed.values as Values,
    options,
    env.filter((flag) => flag in options),
    process.env,
  );
  return { values, source, positionals: parsed.positionals };
}

function str(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

function dataDir(values: Values): string {
  return resolve(str(values, 'data') ?? './data');
}

/** `where` is the flag or the variable the text came from. */
function parsePort(text: string | undefined, where: string): number {
  if (text === undefined) return 4000;
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) {
    throw new UsageError(`${where} must be a whole number from 0 to 65535 (got ${JSON.stringify(text)})`);
  }
  return Number(text);
}

function parseFeatures(text: string | undefined): Feature[] | undefined {
  if (text === undefined) return undefined;
  const list = text.split(',').filter((f) => f !== '');
  for (const feature of list) {
    if (!isFeature(feature)) {
      throw new UsageError(`--features: unknown feature ${JSON.stringify(feature)} (known: ${FEATURES.join(', ')})`);
    }
  }
  return [...new Set(list as Feature[])];
}

/**
 * On stderr, so that stdout holds only JSON log lines. The commands it shows name the store when it
 * is not the default: the data folder, or the Redis given by flag.
 */
function printDevelopmentApp(
  app: App,
  url: string,
  store: { dir?: string; redis?: string | undefined; redisCluster?: string | undefined },
): void {
  const options =
    store.redis !== undefined
      ? { redis: store.redis }
      : store.redisCluster !== undefined
        ? { redisCluster: store.redisCluster }
        : store.dir !== undefined && store.dir !== resolve('./data')
          ? { dataDir: store.dir }
          : {};
  process.stderr.write(developmentAppBanner(app, url, options));
}

/**
 * The dashboard password hash from `--dashboard-password-hash`, `--dashboard-password-hash-file`
 * or their variables, checked; `where` names the one it came from. The command line wins over the
 * environment; the hash and the file from the same place are refused together.
 */
function dashboardHashGiven(
  values: Values,
  source: (flag: string) => string,
): { hash: string; where: string } | undefined {
  const [direct, file] = ['dashboard-password-hash', 'dashboard-password-hash-file'] as const;
  const text = str(values, direct);
  const path = str(values, file);
  let use: typeof direct | typeof file | undefined =
    text !== undefined ? direct : path !== undefined ? file : undefined;
  if (text !== undefined && path !== undefined) {
    const flagged = (flag: string) => source(flag).startsWith('--');
    if (flagged(direct) === flagged(file)) throw new UsageError(`give ${source(direct)} or ${source(file)}, not both`);
    use = flagged(direct) ? direct : file;
  }
  if (use === undefined) return undefined;
  const where = source(use);
  let hash = text as string;
  if (use === file) {
    try {
      hash = readFileSync(resolve(path as string), 'utf8').trim();
    } catch (error) {
      throw new UsageError(`${where}: ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  try {
    parsePasswordHash(hash);
  } catch (error) {
    throw new UsageError(`${where}: ${(error as Error).message}`);
  }
  return { hash, where };
}

const SERVE_FLAGS: Flags = {
  host: { type: 'string' },
  port: { type: 'string' },
  data: { type: 'string' },
  config: { type: 'string' },
  'allow-private-webhooks': { type: 'boolean' },
  redis: { type: 'string' },
  'redis-cluster': { type: 'string' },
  'log-level': { type: 'string' },
  stun: { type: 'string', multiple: true },
  turn: { type: 'string', multiple: true },
  'turn-secret': { type: 'string' },
  'media-address': { type: 'string', multiple: true },
  'media-ports': { type: 'string' },
  'dashboard-password-hash': { type: 'string' },
  'dashboard-password-hash-file': { type: 'string' },
};

function list(values: Values, name: string): string[] | undefined {
  const value = values[name];
  return Array.isArray(value) ? splitList(value) : undefined;
}

/** Reads the config file; when a variable named it, its errors say so (`REALTIME_CONFIG: config ...`). */
function readConfigFrom(path: string, where: string, allowPrivateWebhooks: boolean): ConfigFile {
  try {
    return readConfig(resolve(path), allowPrivateWebhooks);
  } catch (error) {
    if (error instanceof UsageError && !where.startsWith('--')) throw new UsageError(`${where}: ${error.message}`);
    throw error;
  }
}

async function serve(args: string[]): Promise<void> {
  const { values, source } = parse(args, SERVE_FLAGS, 0, Object.keys(SERVE_FLAGS));
  const engine: EngineChoice = redisChoice(values, source) ?? { kind: 'embedded' };
  const logLevel = str(values, 'log-level') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new UsageError(
      `${source('log-level')} must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevel)})`,
    );
  }
  const port = parsePort(str(values, 'port'), source('port'));
  const allowPrivateWebhooks = values['allow-private-webhooks'] === true;
  const configPath = str(values, 'config');
  const config: ConfigFile = configPath
    ? readConfigFrom(configPath, source('config'), allowPrivateWebhooks)
    : { apps: [] };
  const configApps = config.apps;
  const calls = callOptions(
    config.calls,
    { stun: list(values, 'stun'), turn: list(values, 'turn'), turnSecret: str(values, 'turn-secret') },
    source,
    configPath === undefined ? undefined : `config ${resolve(configPath)}: calls`,
  );
  const streams = streamOptions(
    config.streams,
    { mediaAddress: list(values, 'media-address'), mediaPorts: str(values, 'media-ports') },
    source,
  );
  const host = str(values, 'host') ?? '127.0.0.1';
  const dir = dataDir(values);
  const given = dashboardHashGiven(values, source);
  const dashboardHash = given?.hash ?? config.dashboardPasswordHash;

  // The config's apps are in place before the port opens, so no early request meets a missing app.
  // The store stays open until the server listens: a development app is made only then, so a start
  // that fails leaves none whose credentials were never shown.
  const store = await openApps(engine, dir);
  let server: RunningServer;
  let created: App | undefined;
  let streamsInPlans: boolean;
  try {
    for (const app of configApps) await store.apps.upsert(app);
    const known = await store.apps.list();
    const noApps = known.length === 0;
    // The development app made when there is none has every feature.
    streamsInPlans = noApps || known.some((app) => app.features.includes('streams'));
    server = await listen({
      host,
      port,
      dataDir: dir,
      engine,
      // Stored again by the server if its storage loses them (a Redis restarted without its data).
      apps: configApps,
      allowPrivateWebhooks,
      logLevel: logLevel as LogLevel,
      ...(config.webhooks === undefined ? {} : { webhooks: config.webhooks }),
      ...(config.offlineDelayMs === undefined ? {} : { offlineDelayMs: config.offlineDelayMs }),
      ...(config.metricsToken === undefined ? {} : { metricsToken: config.metricsToken }),
      ...(config.shutdownDelayMs === undefined ? {} : { shutdownDelayMs: config.shutdownDelayMs }),
      ...(config.limits === undefined ? {} : { limits: config.limits }),
      ...(calls === undefined ? {} : { calls }),
      ...(streams === undefined ? {} : { streams }),
      ...(dashboardHash === undefined ? {} : { dashboard: { passwordHash: dashboardHash } }),
    });
    created = noApps ? await createDevelopmentApp(store.apps, server) : undefined;
  } finally {
    await store.close();
  }
  // Ready to stop before saying it is ready: a supervisor may signal as soon as it reads the line.
  handleStopSignals({
    stop: (reason) => {
      server.log.info({ signal: reason }, 'draining and stopping');
      server.close().then(
        () => {
          server.log.info('stopped');
          process.exit(0);
        },
        (error: unknown) => {
          server.log.error({ err: error }, 'failed to stop cleanly');
          process.exit(1);
        },
      );
    },
    force: () => process.exit(1),
  });
  // The Redis address is not logged: it may hold a password.
  server.log.info(
    engine.kind === 'redis' ? { engine: engine.cluster ? 'redis-cluster' : 'redis' } : { data: dir },
    `listening on ${server.url}`,
  );
  const unreachable = unreachableStreamsWarning(host, streams, streamsInPlans);
  if (unreachable) server.log.warn(unreachable);
  if (given?.where === '--dashboard-password-hash') {
    server.log.warn(
      'the dashboard password hash was given on the command line, where any local user can read it (ps, /proc): give it in --dashboard-password-hash-file or REALTIME_DASHBOARD_PASSWORD_HASH instead',
    );
  }
  if (created) {
    server.log.info({ key: created.key }, 'created a development app');
    // The commands shown name the store as it was given: a variable is read again by the CLI.
    const store =
      engine.kind === 'redis'
        ? engine.cluster
          ? { redisCluster: source('redis-cluster') === '--redis-cluster' ? engine.cluster.join(',') : undefined }
          : { redis: source('redis') === '--redis' ? engine.url : undefined }
        : { dir };
    printDevelopmentApp(created, server.url, store);
  }
}

/** Starts the server; a port that cannot be listened on, or a Redis set to evict, is a Failure of one line. */
async function listen(options: ServerOptions): Promise<RunningServer> {
  try {
    return await startServer(options);
  } catch (error) {
    if (error instanceof RedisConfigRefused) throw new Failure(`cannot run on this Redis: ${oneLine(error.message)}`);
    const err = error as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE') {
      throw new Failure(
        `cannot listen on ${options.host ?? '127.0.0.1'}:${options.port}: the port is taken (EADDRINUSE); choose another with --port or REALTIME_PORT`,
      );
    }
    if (typeof err.code === 'string' && typeof err.syscall === 'string') {
      throw new Failure(`cannot listen: ${oneLine(err.message)}`);
    }
    throw error;
  }
}

/**
 * A first start, with no app at all: one to try the service with, its credentials shown once the
 * server listens. Nobody knows its key before, so no early request misses it. When it cannot be
 * stored the server stops: it would run with no app anybody could use.
 */
async function createDevelopmentApp(store: AppStore, server: RunningServer): Promise<App> {
  const app = newApp({ name: 'development' });
  try {
    await store.upsert(app);
  } catch (error) {
    await server.close().catch(() => undefined);
    throw error;
  }
  return app;
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ');
}

const REDIS_WAIT_MS = 5000;

/** A Redis address, checked before anything connects; `where` is the flag or the variable. */
function redisUrl(text: string, where: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  // The value is not repeated: it may hold a password.
  if (url?.protocol !== 'redis:' && url?.protocol !== 'rediss:') {
    throw new UsageError(`${where} must be a redis:// or rediss:// URL`);
  }
  return text;
}

/**
 * The Redis the flags (or their variables) name: one Redis (`--redis`) or a Redis Cluster's seed
 * nodes (`--redis-cluster`, comma-separated); both at once is a usage error. Undefined: neither.
 */
function redisChoice(
  values: Values,
  source: (flag: string) => string,
): Extract<EngineChoice, { kind: 'redis' }> | undefined {
  const redis = str(values, 'redis');
  const cluster = str(values, 'redis-cluster');
  if (redis !== undefined && cluster !== undefined) {
    throw new UsageError(`${source('redis')} and ${source('redis-cluster')} name two stores: give one`);
  }
  if (redis !== undefined) return { kind: 'redis', url: redisUrl(redis, source('redis')) };
  if (cluster === undefined) return undefined;
  const seeds = cluster
    .split(',')
    .map((seed) => seed.trim())
    .filter((seed) => seed !== '');
  if (seeds.length === 0) throw new UsageError(`${source('redis-cluster')} must list at least one redis:// URL`);
  return { kind: 'redis', cluster: seeds.map((seed) => redisUrl(seed, source('redis-cluster'))) };
}

/** The app store of the engine; one that cannot be opened is a Failure of one line. */
async function openApps(engine: AppStoreChoice, dir: string): Promise<OpenedApps> {
  try {
    return await openAppStore(engine, { dataDir: dir });
  } catch (error) {
    const why = oneLine((error as Error).message);
    throw new Failure(
      engine.kind === 'redis' ? `cannot reach Redis: ${why}` : `cannot open the data folder ${dir}: ${why}`,
    );
  }
}

/**
 * Runs `use` on the app store the flags name (Redis when given, else the data folder), every call
 * awaited, and closes the store after.
 */
async function withStore<T>(
  values: Values,
  source: (flag: string) => string,
  use: (store: AppStore) => Promise<T>,
): Promise<T> {
  const redis = redisChoice(values, source);
  const choice: AppStoreChoice =
    redis === undefined
      ? { kind: 'embedded' }
      : // Someone waits at the terminal: a Redis that is down is said in seconds.
        { ...redis, startTimeoutMs: REDIS_WAIT_MS };
  const opened = await openApps(choice, dataDir(values));
  try {
    return await use(opened.apps);
  } finally {
    await opened.close();
  }
}

/** A rotation in words: until when the old secret holds, and which one signs webhooks. */
function describeRotation(retiresAt: number, signer: WebhookSigner): string {
  return `old secret accepted until ${new Date(retiresAt).toISOString()}; webhooks signed with the ${signer} one`;
}

/** The text form of `apps show`: one field a line, the secret only when asked for. */
function describeApp(app: App, showSecret: boolean, nowMs: number): string {
  const rotation = activeRotation(app, nowMs);
  const lines = [
    ['key', app.key],
    ['name', app.name],
    ['features', app.features.join(',') || '-'],
    ['webhook', app.webhook || '-'],
    ['rate limit', `${app.rateLimit.perSecond}/s, burst ${app.rateLimit.burst}`],
    ['secret', showSecret ? app.secret : '(hidden; add --secret to show it)'],
    ['rotation', rotation ? describeRotation(rotation.retiresAt, rotation.signer) : '-'],
  ];
  if (rotation && showSecret) lines.push(['old secret', rotation.oldSecret]);
  return lines.map(([name, value]) => `${`${name}:`.padEnd(12)}${value}\n`).join('');
}

/** An app as `--json` prints it: the secrets only when asked for, a rotation's state when one is under way. */
function appJson(app: App, showSecret: boolean, nowMs: number): Record<string, unknown> {
  const { secret, rotation: _rotation, ...rest } = app;
  const out: Record<string, unknown> = showSecret ? { ...rest, secret } : rest;
  const rotation = activeRotation(app, nowMs);
  if (rotation) {
    out.rotation = showSecret
      ? { ...rotationView(app, nowMs), oldSecret: rotation.oldSecret }
      : rotationView(app, nowMs);
  }
  return out;
}

function parseSigner(text: string | undefined, where: string): WebhookSigner {
  if (text === undefined) return 'new';
  if (text !== 'new' && text !== 'old') throw new UsageError(`${where} must be new or old`);
  return text;
}

async function apps(args: string[]): Promise<void> {
  const [command, ...rest] = args;
  const common: Flags = { data: { type: 'string' }, redis: { type: 'string' }, 'redis-cluster': { type: 'string' } };
  const noApp = (key: string) => new UsageError(`no app has the key ${JSON.stringify(key)}`);
  // A rotation overtaken by other writes three times running (apps/secret-rotation.ts).
  const keptChanging = (key: string) =>
    new Failure(
      `the secret of ${JSON.stringify(key)} kept changing meanwhile (another rotation at the same time): run it again`,
    );
  switch (command) {
    case 'create': {
      const { values, source } = parse(
        rest,
        {
          ...common,
          name: { type: 'string' },
          key: { type: 'string' },
          features: { type: 'string' },
          webhook: { type: 'string' },
          json: { type: 'boolean' },
          'allow-private-webhooks': { type: 'boolean' },
        },
        0,
        SHARED_ENV,
      );
      const key = str(values, 'key');
      if (key !== undefined && !APP_KEY_PATTERN.test(key)) {
        throw new UsageError('--key must be 1 to 64 characters of A-Z a-z 0-9 . _ -');
      }
      const webhook = checkWebhookUrl(
        str(values, 'webhook') ?? '',
        values['allow-private-webhooks'] === true,
        '--webhook',
      );
      const fields: Partial<App> = { name: str(values, 'name') ?? 'app', webhook };
      if (key !== undefined) fields.key = key;
      const features = parseFeatures(str(values, 'features'));
      if (features) fields.features = features;
      const app = newApp(fields);
      await withStore(values, source, async (store) => {
        if ((await store.get(app.key)) !== undefined) {
          throw new UsageError(`an app with the key ${JSON.stringify(app.key)} exists already`);
        }
        await store.upsert(app);
      });
      if (values.json) process.stdout.write(`${JSON.stringify(app)}\n`);
      else process.stdout.write(`key:    ${app.key}\nsecret: ${app.secret}\n`);
      return;
    }
    case 'list': {
      const { values, source } = parse(rest, { ...common, json: { type: 'boolean' } }, 0, SHARED_ENV);
      const list = await withStore(values, source, async (store) => await store.list());
      if (values.json) {
        const now = Date.now();
        process.stdout.write(`${JSON.stringify(list.map((app) => appJson(app, false, now)))}\n`);
        return;
      }
      for (const app of list) {
        process.stdout.write(`${app.key}\t${app.name}\t${app.features.join(',')}\t${app.webhook || '-'}\n`);
      }
      return;
    }
    case 'show': {
      const { values, source, positionals } = parse(
        rest,
        { ...common, secret: { type: 'boolean' }, json: { type: 'boolean' } },
        1,
        SHARED_ENV,
      );
      const key = positionals[0];
      if (key === undefined) throw new UsageError('apps show needs the app key');
      const app = await withStore(values, source, async (store) => await store.get(key));
      if (!app) throw noApp(key);
      const showSecret = values.secret === true;
      const now = Date.now();
      if (values.json) {
        process.stdout.write(`${JSON.stringify(appJson(app, showSecret, now))}\n`);
      } else {
        process.stdout.write(describeApp(app, showSecret, now));
      }
      return;
    }
    case 'rotate-secret': {
      const { values, source, positionals } = parse(
        rest,
        { ...common, overlap: { type: 'string' }, 'sign-webhooks': { type: 'string' } },
        1,
        SHARED_ENV,
      );
      const key = positionals[0];
      if (key === undefined) throw new UsageError('apps rotate-secret needs the app key');
      const overlapMs = parseOverlap(str(values, 'overlap') ?? '0');
      if (overlapMs === undefined) {
        throw new UsageError('--overlap must be 0 or a whole number of s, m, h or d (such as 24h), at most 30d');
      }
      const signer = parseSigner(str(values, 'sign-webhooks'), '--sign-webhooks');
      if (overlapMs === 0 && signer === 'old') {
        throw new UsageError('--sign-webhooks old needs an --overlap: without one the old secret stops at once');
      }
      const nowMs = Date.now();
      const outcome = await withStore(values, source, (store) =>
        rotateSecret(store, key, { overlapMs, signer, nowMs }),
      );
      if (!outcome.ok) {
        if (outcome.error === 'no_app') throw noApp(key);
        if (outcome.error === 'changed') throw keptChanging(key);
        throw new Failure(
          `a rotation of ${JSON.stringify(key)} is under way until ${new Date(outcome.retiresAt ?? 0).toISOString()}: ` +
            `retire its old secret first (realtime apps retire-secret ${key}), or rotate with --overlap 0`,
        );
      }
      process.stdout.write(`secret: ${outcome.secret}\n`);
      if (outcome.rotation) {
        process.stdout.write(`rotation: ${describeRotation(outcome.rotation.retiresAt, outcome.rotation.signer)}\n`);
      }
      return;
    }
    case 'retire-secret': {
      const { values, source, positionals } = parse(rest, common, 1, SHARED_ENV);
      const key = positionals[0];
      if (key === undefined) throw new UsageError('apps retire-secret needs the app key');
      const outcome = await withStore(values, source, (store) => retireSecret(store, key, Date.now()));
      if (!outcome.ok) throw outcome.error === 'no_app' ? noApp(key) : keptChanging(key);
      process.stdout.write(
        outcome.retired
          ? 'old secret retired: only the current secret is accepted\n'
          : 'no rotation under way: only the current secret is accepted\n',
      );
      return;
    }
    case 'sign-webhooks': {
      const { values, source, positionals } = parse(rest, common, 2, SHARED_ENV);
      const [key, which] = positionals;
      if (key === undefined || which === undefined) {
        throw new UsageError('apps sign-webhooks needs the app key and new or old');
      }
      const signer = parseSigner(which, 'apps sign-webhooks');
      const outcome = await withStore(values, source, (store) => setWebhookSigner(store, key, signer, Date.now()));
      if (!outcome.ok) {
        if (outcome.error === 'no_app') throw noApp(key);
        if (outcome.error === 'changed') throw keptChanging(key);
        throw new Failure(
          `no rotation of ${JSON.stringify(key)} is under way: webhooks are signed with its one secret`,
        );
      }
      process.stdout.write(`rotation: ${describeRotation(outcome.rotation.retiresAt, outcome.rotation.signer)}\n`);
      return;
    }
    case 'set-webhook': {
      const { values, source, positionals } = parse(
        rest,
        { ...common, 'allow-private-webhooks': { type: 'boolean' } },
        2,
        SHARED_ENV,
      );
      const [key, url] = positionals;
      if (key === undefined || url === undefined)
        throw new UsageError('apps set-webhook needs the app key and a URL ("" clears it)');
      checkWebhookUrl(url, values['allow-private-webhooks'] === true, 'set-webhook');
      const found = await withStore(values, source, async (store) => await store.setWebhook(key, url));
      if (!found) throw noApp(key);
      process.stdout.write(url === '' ? 'webhook cleared\n' : `webhook: ${url}\n`);
      return;
    }
    default:
      throw new UsageError(
        command === undefined || command.startsWith('-')
          ? 'apps needs a command first: create, list, show, rotate-secret, retire-secret, sign-webhooks, set-webhook'
          : `unknown apps command ${JSON.stringify(command)}`,
      );
  }
}

/** Prints the scrypt hash of the password on standard input (one trailing newline is not part of it). */
async function dashboardPassword(args: string[]): Promise<void> {
  parse(args, {}, 0);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const password = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (password === '') throw new UsageError('the dashboard password is read from standard input, and it was empty');
  process.stdout.write(`${await hashDashboardPassword(password)}\n`);
}

function keygen(args: string[]): void {
  parse(args, {}, 0);
  // 32 random bytes: the app's local sealing key. The service never sees it.
  process.stdout.write(`${randomBytes(32).toString('base64url')}\n`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      // `realtime serve --help` asks, rather than starting with an unknown flag refused.
      if (rest.includes('--help') || rest.includes('-h')) {
        process.stdout.write(`${USAGE}\n`);
        return;
      }
      return serve(rest);
    case 'apps':
      return apps(rest);
    case 'keygen':
      return keygen(rest);
    case 'dashboard-password':
      return dashboardPassword(rest);
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      throw new UsageError(
        command === undefined ? 'a command is needed' : `unknown command ${JSON.stringify(command)}`,
      );
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`realtime: ${error.message} (see "realtime help")\n`);
    process.exit(2);
  }
  if (error instanceof Failure) {
    process.stderr.write(`realtime: ${error.message}\n`);
    process.exit(1);
  }
  // The storage refused (full, unreachable): what it said, in one line, without a stack.
  if (error instanceof StoreError) {
    const cause = error.cause instanceof Error ? ` (${oneLine(error.cause.message)})` : '';
    process.stderr.write(`realtime: ${oneLine(error.message)}${cause}\n`);
    process.exit(1);
  }
  // Anything else is a bug of the CLI: the stack helps to report it.
  const err = error as Error;
  process.stderr.write(`realtime: ${err.stack ?? String(error)}\n`);
  process.exit(1);
});
