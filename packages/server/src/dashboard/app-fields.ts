/**
 * The fields of an app as the dashboard takes them (docs/dashboard.md, "Apps"): each broken rule is
 * a `400 bad_request` whose one-line message names the field.
 */
import { FEATURES, type Feature, isFeature } from '@realtime/protocol';
import { APP_KEY_PATTERN } from '../apps/defaults.js';
import { type RotationView, rotationView } from '../apps/secret-rotation.js';
import { UsageError } from '../config/usage-error.js';
import { checkWebhookUrl } from '../config/webhook-url.js';
import { quote } from '../core/quote.js';
import type { App, RateLimit } from '../engines/types.js';
import { Refusal } from './refusal.js';

export const NAME_MAX = 100;
export const RATE_MAX = 1_000_000;
/** Longer addresses are refused before they are parsed: they would only bloat every batch's record. */
export const WEBHOOK_MAX = 2048;

/** What a change may set; left-out fields keep their value, and so do left-out rate-limit halves. */
export interface AppChanges {
  name?: string;
  features?: Feature[];
  rateLimit?: Partial<RateLimit>;
  webhook?: string;
}

/** An app as the dashboard shows it: never a secret. */
export interface AppView {
  key: string;
  name: string;
  features: Feature[];
  rateLimit: RateLimit;
  webhook: string;
  /** Only while a rotation is under way: when the old secret retires, which one signs webhooks. */
  rotation?: RotationView;
}

export function appView(app: App, nowMs: number): AppView {
  const { key, name, features, rateLimit, webhook } = app;
  const view: AppView = {
    key,
    name,
    features,
    rateLimit: { perSecond: rateLimit.perSecond, burst: rateLimit.burst },
    webhook,
  };
  const rotation = rotationView(app, nowMs);
  if (rotation) view.rotation = rotation;
  return view;
}

const bad = (message: string) => new Refusal(400, 'bad_request', message);

function name(value: unknown): string {
  if (typeof value !== 'string') throw bad('name must be a string');
  const length = [...value].length;
  if (length < 1 || length > NAME_MAX) throw bad(`name must be 1 to ${NAME_MAX} characters (got ${length})`);
  // Names are shown one a line (the CLI's list is tab-separated): no control characters.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: those are what it looks for
  if (/[\u0000-\u001f\u007f]/.test(value)) throw bad('name must not hold control characters (tabs, line breaks)');
  if (value.trim() === '') throw bad('name must not be only spaces');
  return value;
}

function features(value: unknown): Feature[] {
  if (!Array.isArray(value)) throw bad(`features must be a list of features (known: ${FEATURES.join(', ')})`);
  for (const [i, feature] of value.entries()) {
    if (!isFeature(feature)) {
      throw bad(`features[${i}]: unknown feature ${quote(feature)} (known: ${FEATURES.join(', ')})`);
    }
  }
  // Kept in the protocol's order, once each: the plan is a set.
  return FEATURES.filter((feature) => value.includes(feature));
}

function whole(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > RATE_MAX) {
    throw bad(`${field} must be a whole number from 1 to ${RATE_MAX} (got ${quote(value)})`);
  }
  return value;
}

function rateLimit(value: unknown): Partial<RateLimit> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad('rateLimit must be { "perSecond": n, "burst": n }');
  }
  const fields = value as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (field !== 'perSecond' && field !== 'burst') throw bad(`rateLimit: unknown field ${quote(field)}`);
  }
  const out: Partial<RateLimit> = {};
  if (fields.perSecond !== undefined) out.perSecond = whole(fields.perSecond, 'rateLimit.perSecond');
  if (fields.burst !== undefined) out.burst = whole(fields.burst, 'rateLimit.burst');
  return out;
}

function webhook(value: unknown, allowPrivate: boolean): string {
  if (typeof value !== 'string') throw bad('webhook must be a string: an address, or "" for none');
  if (value.length > WEBHOOK_MAX) throw bad(`webhook must be at most ${WEBHOOK_MAX} characters`);
  try {
    return checkWebhookUrl(value, allowPrivate, 'webhook');
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    // The same rule and words as the CLI's, with the address cut short as in every API message.
    throw bad(error.message.replace(JSON.stringify(value), quote(value)));
  }
}

function known(body: Record<string, unknown>, fields: readonly string[]): void {
  for (const field of Object.keys(body)) {
    if (field === 'key' && !fields.includes('key')) throw bad('key: the key of an app cannot change');
    if (!fields.includes(field)) throw bad(`unknown field ${quote(field)} (known: ${fields.join(', ')})`);
  }
}

/** The changes a PATCH asks for. */
export function readChanges(body: Record<string, unknown>, allowPrivateWebhooks: boolean): AppChanges {
  known(body, ['name', 'features', 'rateLimit', 'webhook']);
  const out: AppChanges = {};
  if (body.name !== undefined) out.name = name(body.name);
  if (body.features !== undefined) out.features = features(body.features);
  if (body.rateLimit !== undefined) out.rateLimit = rateLimit(body.rateLimit);
  if (body.webhook !== undefined) out.webhook = webhook(body.webhook, allowPrivateWebhooks);
  return out;
}

/** A new app's fields: a name, and a key when the operator picks one. */
export function readCreation(
  body: Record<string, unknown>,
  allowPrivateWebhooks: boolean,
): AppChanges & { name: string; key?: string } {
  known(body, ['name', 'key', 'features', 'rateLimit', 'webhook']);
  if (body.name === undefined) throw bad('name is needed: 1 to 100 characters');
  const { key, ...rest } = body;
  if (key !== undefined && (typeof key !== 'string' || !APP_KEY_PATTERN.test(key))) {
    throw bad(`key must be 1 to 64 characters of A-Z a-z 0-9 . _ - (got ${quote(key)})`);
  }
  const changes = readChanges(rest, allowPrivateWebhooks);
  return { ...changes, name: changes.name as string, ...(typeof key === 'string' ? { key } : {}) };
}

/** The app with the changes made. */
export function changed(app: App, changes: AppChanges): App {
  return {
    ...app,
    ...(changes.name === undefined ? {} : { name: changes.name }),
    ...(changes.features === undefined ? {} : { features: changes.features }),
    ...(changes.webhook === undefined ? {} : { webhook: changes.webhook }),
    rateLimit: { ...app.rateLimit, ...changes.rateLimit },
  };
}
