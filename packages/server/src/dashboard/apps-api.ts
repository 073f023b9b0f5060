/** The apps of the service as the dashboard manages them (docs/dashboard.md, "Apps"). */
import { DEFAULT_RATE_LIMIT } from '../apps/defaults.js';
import { newApp } from '../apps/generate.js';
import { removeApp } from '../apps/remove-app.js';
import { MAX_OVERLAP_MS, retireSecret, rotateSecret } from '../apps/secret-rotation.js';
import { quote } from '../core/quote.js';
import type { App } from '../engines/types.js';
import { appView, changed, readChanges, readCreation } from './app-fields.js';
import type { DashboardDeps } from './deps.js';
import { Refusal } from './refusal.js';
import { changing, DASHBOARD_PATH, type Handler, ok, type Route, readJsonObject, signedIn } from './request.js';

const BODY_BYTES = 16 * 1024;
const SHAPE = 'object';

const byKey = (a: App, b: App): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

const noApp = (key: string | undefined) => new Refusal(404, 'no_app', `no app has the key ${quote(key ?? '')}`);

/** The app as stored now (not the second-long cache): an operator acts on what is there. */
async function stored(deps: DashboardDeps, key: string | undefined): Promise<App> {
  const app = key === undefined ? undefined : await deps.storedApps.get(key);
  if (!app) throw noApp(key);
  return app;
}

const list: Handler = async (req, res, deps) => {
  req.resume();
  signedIn(req, deps);
  const apps = [...(await deps.storedApps.list())].sort(byKey);
  const now = deps.now();
  ok(res, { apps: apps.map((app) => appView(app, now)) });
};

const create: Handler = async (req, res, deps) => {
  changing(req, deps);
  const fields = readCreation(await readJsonObject(req, BODY_BYTES, SHAPE), deps.allowPrivateWebhooks);
  const app = newApp({ ...fields, rateLimit: { ...DEFAULT_RATE_LIMIT, ...fields.rateLimit } });
  // Two creations of one key at the same instant may both pass this; the second then replaces the first.
  if ((await deps.storedApps.get(app.key)) !== undefined) {
    throw new Refusal(409, 'exists', `an app with the key ${JSON.stringify(app.key)} exists already`);
  }
  await deps.apps.upsert(app);
  deps.log.info({ app: app.key }, 'dashboard: app created');
  ok(res, { app: appView(app, deps.now()) }, {}, 201);
};

const show: Handler = async (req, res, deps, [key]) => {
  req.resume();
  signedIn(req, deps);
  ok(res, { app: appView(await stored(deps, key), deps.now()) });
};

const change: Handler = async (req, res, deps, [key]) => {
  changing(req, deps);
  const changes = readChanges(await readJsonObject(req, BODY_BYTES, SHAPE), deps.allowPrivateWebhooks);
  const app = await stored(deps, key);
  const next = changed(app, changes);
  const onlyWebhook = Object.keys(changes).every((field) => field === 'webhook');
  if (changes.webhook !== undefined && onlyWebhook) {
    // One field set in place: a secret rotated meanwhile stays rotated.
    if (!(await deps.apps.setWebhook(app.key, changes.webhook))) throw noApp(key);
  } else if (Object.keys(changes).length > 0) {
    await deps.apps.upsert(next);
  }
  deps.log.info({ app: app.key, fields: Object.keys(changes) }, 'dashboard: app changed');
  ok(res, { app: appView(next, deps.now()) });
};

const remove: Handler = async (req, res, deps, [key]) => {
  req.resume();
  changing(req, deps);
  // The record through the cached store (this node stops taking the app at once), read uncached first.
  const removal = { ...deps.appData, apps: deps.apps, consoles: deps.console, now: deps.now };
  if (key === undefined || (await deps.storedApps.get(key)) === undefined || !(await removeApp(removal, key))) {
    throw noApp(key);
  }
  deps.log.info({ app: key }, 'dashboard: app deleted');
  ok(res, {});
};

const reveal: Handler = async (req, res, deps, [key]) => {
  req.resume();
  signedIn(req, deps);
  const app = await stored(deps, key);
  deps.log.info({ app: app.key }, 'dashboard: secret revealed');
  ok(res, { secret: app.secret });
};

const ROTATION_SHAPE = 'object like { "overlapSeconds": 86400, "signer": "new" }';
const MAX_OVERLAP_SECONDS = MAX_OVERLAP_MS / 1000;

/** A rotation's options: none (no body, or `{}`) rotates at once, as before overlaps. */
function readRotation(body: Record<string, unknown>): { overlapMs: number; signer: 'new' | 'old' } {
  for (const field of Object.keys(body)) {
    if (field !== 'overlapSeconds' && field !== 'signer') {
      throw new Refusal(400, 'bad_request', `unknown field ${quote(field)} (known: overlapSeconds, signer)`);
    }
  }
  const { overlapSeconds = 0, signer = 'new' } = body;
  if (
    typeof overlapSeconds !== 'number' ||
    !Number.isInteger(overlapSeconds) ||
    overlapSeconds < 0 ||
    overlapSeconds > MAX_OVERLAP_SECONDS
  ) {
    throw new Refusal(
      400,
      'bad_request',
      `overlapSeconds must be a whole number from 0 to ${MAX_OVERLAP_SECONDS} (got ${quote(overlapSeconds)})`,
    );
  }
  if (signer !== 'new' && signer !== 'old') {
    throw new Refusal(400, 'bad_request', `signer must be "new" or "old" (got ${quote(signer)})`);
  }
  if (overlapSeconds === 0 && signer === 'old') {
    throw new Refusal(
      400,
      'bad_request',
      'signer "old" needs an overlapSeconds: without one the old secret stops at once',
    );
  }
  return { overlapMs: overlapSeconds * 1000, signer };
}

const changedMeanwhile = () =>
  new Refusal(409, 'changed', 'the secret kept changing meanwhile (another rotation at the same time): try again');

const rotate: Handler = async (req, res, deps, [key]) => {
  const sent = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (!sent) req.resume();
  changing(req, deps);
  const options = readRotation(sent ? await readJsonObject(req, BODY_BYTES, ROTATION_SHAPE) : {});
  if (key === undefined) throw noApp(key);
  // Through the cached store: this node takes the new secret at once, the others within their second.
  const outcome = await rotateSecret(deps.apps, key, { ...options, nowMs: deps.now() });
  if (!outcome.ok) {
    if (outcome.error === 'no_app') throw noApp(key);
    if (outcome.error === 'changed') throw changedMeanwhile();
    throw new Refusal(
      409,
      'rotating',
      `a rotation is under way until ${new Date(outcome.retiresAt ?? 0).toISOString()}: retire the old secret first, or rotate with no overlap`,
    );
  }
  deps.log.info({ app: key, overlapMs: options.overlapMs }, 'dashboard: secret rotated');
  ok(res, outcome.rotation ? { secret: outcome.secret, rotation: outcome.rotation } : { secret: outcome.secret });
};

const retire: Handler = async (req, res, deps, [key]) => {
  req.resume();
  changing(req, deps);
  const outcome = key === undefined ? undefined : await retireSecret(deps.apps, key, deps.now());
  if (!outcome?.ok) throw outcome?.error === 'changed' ? changedMeanwhile() : noApp(key);
  deps.log.info({ app: key, retired: outcome.retired }, 'dashboard: old secret retired');
  ok(res, { retired: outcome.retired });
};

const APPS = `${DASHBOARD_PATH}/api/apps`;

export const appRoutes: Route[] = [
  { path: APPS, methods: { GET: list, POST: create } },
  { path: `${APPS}/:key`, methods: { GET: show, PATCH: change, DELETE: remove } },
  { path: `${APPS}/:key/secret`, methods: { GET: reveal, POST: rotate } },
  { path: `${APPS}/:key/secret/retire`, methods: { POST: retire } },
];
