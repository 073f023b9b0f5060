import { readFileSync } from 'node:fs';
import { type Feature, isFeature, isRecord } from '@realtime/protocol';
import { ALL_FEATURES, APP_KEY_PATTERN, DEFAULT_RATE_LIMIT, MIN_SECRET_LENGTH } from '../apps/defaults.js';
import type { App, RateLimit, SecretRotation } from '../engines/types.js';
import { TrustedProxies } from '../http/client-address.js';
import type { WebhookTimings } from '../webhooks/retry-policy.js';
import { type CallsFileConfig, parseCallsConfig } from './calls-config.js';
import { parsePasswordHash } from './password-hash.js';
import type { ServerLimits } from './server-limits.js';
import { parseStreamsConfig, type StreamsFileConfig } from './streams-config.js';
import { UsageError } from './usage-error.js';
import { checkWebhookUrl } from './webhook-url.js';

const APP_FIELDS = new Set([
  'key',
  'secret',
  'name',
  'webhook',
  'features',
  'rateLimit',
  'oldSecret',
  'oldSecretRetiresAt',
  'webhooksSignedBy',
]);
const TOP_FIELDS = new Set([
  'apps',
  'webhooks',
  'offlineDelayMs',
  'metrics',
  'shutdownDelayMs',
  'limits',
  'calls',
  'streams',
  'dashboard',
]);
const LIMIT_FIELDS = new Set([
  'maxPages',
  'maxPagesPerAddress',
  'maxPendingHandshakes',
  'headersTimeoutMs',
  'trustProxy',
  'maxAsksPerUser',
]);
const TIMING_FIELDS = new Set(['windowMs', 'maxEvents', 'retryDelaysMs', 'giveUpMs', 'resendWindowMs', 'answerMs']);

function unknownField(value: Record<string, unknown>, allowed: Set<string>, where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.has(key)) throw new UsageError(`${where}: unknown field ${JSON.stringify(key)}`);
  }
}

function rateLimit(value: unknown, where: string): RateLimit {
  if (value === undefined) return { ...DEFAULT_RATE_LIMIT };
  if (!isRecord(value)) throw new UsageError(`${where}.rateLimit must be { "perSecond": n, "burst": n }`);
  unknownField(value, new Set(['perSecond', 'burst']), `${where}.rateLimit`);
  const { perSecond, burst } = value;
  if (typeof perSecond !== 'number' || !(perSecond > 0)) {
    throw new UsageError(`${where}.rateLimit.perSecond must be a number above 0`);
  }
  if (burst !== undefined && (typeof burst !== 'number' || !(burst >= 1))) {
    throw new UsageError(`${where}.rateLimit.burst must be a number of at least 1`);
  }
  return { perSecond, burst: burst ?? perSecond };
}

/**
 * A rotation written in the file (docs/operations.md, "Rotating a secret"): the secret before it in
 * `oldSecret`, accepted until `oldSecretRetiresAt` (an ISO 8601 time with its zone), and which one
 * signs webhooks meanwhile (`webhooksSignedBy`, default "new"). Undefined when there is none.
 */
function fileRotation(value: Record<string, unknown>, where: string): SecretRotation | undefined {
  const { oldSecret, oldSecretRetiresAt, webhooksSignedBy } = value;
  if (oldSecret === undefined && oldSecretRetiresAt === undefined && webhooksSignedBy === undefined) return undefined;
  if (typeof oldSecret !== 'string' || oldSecret.length < MIN_SECRET_LENGTH) {
    throw new UsageError(`${where}.oldSecret must be a string of at least ${MIN_SECRET_LENGTH} characters`);
  }
  if (oldSecret === value.secret) throw new UsageError(`${where}.oldSecret is the same as ${where}.secret`);
  const retiresAt = typeof oldSecretRetiresAt === 'string' ? Date.parse(oldSecretRetiresAt) : Number.NaN;
  if (
    typeof oldSecretRetiresAt !== 'string' ||
    !/(Z|[+-]\d\d:\d\d)$/.test(oldSecretRetiresAt) ||
    !Number.isFinite(retiresAt)
  ) {
    throw new UsageError(
      `${where}.oldSecretRetiresAt must be when the old secret stops working, as an ISO 8601 time with its zone (such as "2026-12-01T09:00:00Z")`,
    );
  }
  const signer = webhooksSignedBy ?? 'new';
  if (signer !== 'new' && signer !== 'old') throw new UsageError(`${where}.webhooksSignedBy must be "new" or "old"`);
  return { oldSecret, retiresAt, signer };
}

/** Checks one app entry of a config file. */
export function parseAppEntry(value: unknown, where: string, allowPrivateWebhooks: boolean): App {
  if (!isRecord(value)) throw new UsageError(`${where} must be an object`);
  unknownField(value, APP_FIELDS, where);
  const { key, secret, name, webhook, features } = value;
  if (typeof key !== 'string' || !APP_KEY_PATTERN.test(key)) {
    throw new UsageError(`${where}.key must be 1 to 64 characters of A-Z a-z 0-9 . _ -`);
  }
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) {
    throw new UsageError(`${where}.secret must be a string of at least ${MIN_SECRET_LENGTH} characters`);
  }
  if (name !== undefined && typeof name !== 'string') throw new UsageError(`${where}.name must be a string`);
  if (webhook !== undefined && typeof webhook !== 'string') throw new UsageError(`${where}.webhook must be a string`);
  let plan: Feature[] = [...ALL_FEATURES];
  if (features !== undefined) {
    if (!Array.isArray(features)) throw new UsageError(`${where}.features must be an array`);
    for (const feature of features) {
      if (!isFeature(feature)) {
        throw new UsageError(
          `${where}.features: unknown feature ${JSON.stringify(feature)} (known: ${ALL_FEATURES.join(', ')})`,
        );
      }
    }
    plan = [...new Set(features as Feature[])];
  }
  const app: App = {
    key,
    secret,
    name: name ?? key,
    webhook: checkWebhookUrl(webhook ?? '', allowPrivateWebhooks, `${where}.webhook`),
    features: plan,
    rateLimit: rateLimit(value.rateLimit, where),
  };
  const rotation = fileRotation(value, where);
  if (rotation) app.rotation = rotation;
  return app;
}

/** Reads `{ "apps": [ ... ] }`; every problem is one line naming the file and the field. */
/** What a config file sets: apps, and optionally webhook timings and the offline delay (spec values when left out). */
export interface ConfigFile {
  apps: App[];
  webhooks?: Partial<WebhookTimings>;
  offlineDelayMs?: number;
  /** Bearer token GET /metrics asks for. */
  metricsToken?: string;
  /** How long /ready answers 503 on a stop before pages are closed. */
  shutdownDelayMs?: number;
  /** Connection caps, header timeout, trusted proxies and asks in flight per user (defaults where left out). */
  limits?: Partial<ServerLimits>;
  /** Ring time, STUN and TURN servers (flags and variables may still replace the servers and secret). */
  calls?: CallsFileConfig;
  /** Media addresses and ports of the forwarding units, stream bounds (flags may replace addresses and ports). */
  streams?: StreamsFileConfig;
  /** The dashboard's operator password hash (docs/dashboard.md); the flag or variable replaces it. */
  dashboardPasswordHash?: string;
}

function positiveWhole(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new UsageError(`${where} must be a whole number of at least 1`);
  }
  return value;
}

function timings(value: unknown, where: string): Partial<WebhookTimings> {
  if (!isRecord(value)) throw new UsageError(`${where} must be an object`);
  unknownField(value, TIMING_FIELDS, where);
  const out: Partial<WebhookTimings> = {};
  for (const name of ['windowMs', 'maxEvents', 'giveUpMs', 'resendWindowMs', 'answerMs'] as const) {
    if (value[name] !== undefined) out[name] = positiveWhole(value[name], `${where}.${name}`);
  }
  if (out.maxEvents !== undefined && out.maxEvents > 100) throw new UsageError(`${where}.maxEvents is at most 100`);
  if (value.retryDelaysMs !== undefined) {
    if (!Array.isArray(value.retryDelaysMs)) throw new UsageError(`${where}.retryDelaysMs must be an array`);
    out.retryDelaysMs = value.retryDelaysMs.map((d, i) => positiveWhole(d, `${where}.retryDelaysMs[${i}]`));
  }
  return out;
}

/** `"dashboard": { "passwordHash": "scrypt$..." }`, checked as the service will read it. */
function dashboardHash(value: unknown, where: string): string {
  if (!isRecord(value) || typeof value.passwordHash !== 'string') {
    throw new UsageError(`${where} must be { "passwordHash": "<what realtime dashboard-password prints>" }`);
  }
  unknownField(value, new Set(['passwordHash']), where);
  try {
    parsePasswordHash(value.passwordHash);
  } catch (error) {
    throw new UsageError(`${where}.passwordHash: ${(error as Error).message}`);
  }
  return value.passwordHash;
}

/** `"metrics": { "token": "..." }`: a token short enough to guess would make the bearer check moot. */
function metricsToken(value: unknown, where: string): string {
  if (!isRecord(value)) throw new UsageError(`${where} must be { "token": "<at least 16 characters>" }`);
  unknownField(value, new Set(['token']), where);
  const { token } = value;
  if (typeof token !== 'string' || token.length < 16 || /\s/.test(token)) {
    throw new UsageError(`${where}.token must be at least 16 characters without spaces`);
  }
  return token;
}

/** `"limits": { "maxPages": n, ..., "trustProxy": ["10.0.0.0/8"] }`: see docs/operations.md. */
function limits(value: unknown, where: string): Partial<ServerLimits> {
  if (!isRecord(value)) throw new UsageError(`${where} must be an object`);
  unknownField(value, LIMIT_FIELDS, where);
  const out: Partial<ServerLimits> = {};
  for (const name of ['maxPages', 'maxPagesPerAddress', 'maxPendingHandshakes', 'maxAsksPerUser'] as const) {
    if (value[name] !== undefined) out[name] = positiveWhole(value[name], `${where}.${name}`);
  }
  const timeout = value.headersTimeoutMs;
  if (timeout !== undefined) {
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 100 || timeout > 60_000) {
      throw new UsageError(`${where}.headersTimeoutMs must be a whole number of ms from 100 to 60000`);
    }
    out.headersTimeoutMs = timeout;
  }
  const trust = value.trustProxy;
  if (trust !== undefined) {
    if (!Array.isArray(trust) || !trust.every((entry) => typeof entry === 'string')) {
      throw new UsageError(`${where}.trustProxy must be an array of addresses or CIDR ranges, like ["10.0.0.0/8"]`);
    }
    try {
      new TrustedProxies(trust);
    } catch (error) {
      throw new UsageError(`${where}.trustProxy: ${(error as Error).message}`);
    }
    out.trustProxy = trust;
  }
  return out;
}

/** Reads a config file; every problem is one line naming the file and the field. */
export function readConfig(path: string, allowPrivateWebhooks: boolean): ConfigFile {
  const { apps, value } = readApps(path, allowPrivateWebhooks);
  const config: ConfigFile = { apps };
  if (value.webhooks !== undefined) config.webhooks = timings(value.webhooks, `config ${path}: webhooks`);
  if (value.offlineDelayMs !== undefined) {
    config.offlineDelayMs = positiveWhole(value.offlineDelayMs, `config ${path}: offlineDelayMs`);
  }
  if (value.metrics !== undefined) config.metricsToken = metricsToken(value.metrics, `config ${path}: metrics`);
  if (value.shutdownDelayMs !== undefined) {
    const delay = value.shutdownDelayMs;
    if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > 600_000) {
      throw new UsageError(`config ${path}: shutdownDelayMs must be a whole number of ms from 0 to 600000`);
    }
    config.shutdownDelayMs = delay;
  }
  if (value.limits !== undefined) config.limits = limits(value.limits, `config ${path}: limits`);
  if (value.calls !== undefined) config.calls = parseCallsConfig(value.calls, `config ${path}: calls`);
  if (value.streams !== undefined) config.streams = parseStreamsConfig(value.streams, `config ${path}: streams`);
  if (value.dashboard !== undefined) {
    config.dashboardPasswordHash = dashboardHash(value.dashboard, `config ${path}: dashboard`);
  }
  return config;
}

export function readConfigFile(path: string, allowPrivateWebhooks: boolean): App[] {
  return readApps(path, allowPrivateWebhooks).apps;
}

function readApps(path: string, allowPrivateWebhooks: boolean): { apps: App[]; value: Record<string, unknown> } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`config ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`config ${path}: not JSON (${(error as Error).message})`);
  }
  if (!isRecord(value)) throw new UsageError(`config ${path}: must be a JSON object with "apps"`);
  unknownField(value, TOP_FIELDS, `config ${path}`);
  const entries = value.apps ?? [];
  if (!Array.isArray(entries)) throw new UsageError(`config ${path}: "apps" must be an array`);
  const apps = entries.map((entry, i) => parseAppEntry(entry, `config ${path}: apps[${i}]`, allowPrivateWebhooks));
  const keys = new Set<string>();
  for (const app of apps) {
    if (keys.has(app.key)) throw new UsageError(`config ${path}: the key ${JSON.stringify(app.key)} appears twice`);
    keys.add(app.key);
  }
  return { apps, value };
}
