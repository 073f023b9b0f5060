/** The apps of the service as the dashboard manages them (docs/dashboard.md, "Apps"). */
import { DEFAULT_RATE_LIMIT } from '../apps/defaults.js';
import { newApp, newSecret } from '../apps/generate.js';
import { removeApp } from '../apps/remove-app.js';
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
  ok(res, { apps: apps.map(appView) });
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
  ok(res, { app: appView(app) }, {}, 201);
};

const show: Handler = async (req, res, deps, [key]) => {
  req.resume();
  signedIn(req, deps);
  ok(res, { app: appView(await stored(deps, key)) });
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
  ok(res, { app: appView(next) });
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

const rotate: Handler = async (req, res, deps, [key]) => {
  req.resume();
  changing(req, deps);
  const secret = newSecret();
  if (key === undefined || !(await deps.apps.setSecret(key, secret))) throw noApp(key);
  deps.log.info({ app: key }, 'dashboard: secret rotated');
  ok(res, { secret });
};

const APPS = `${DASHBOARD_PATH}/api/apps`;

export const appRoutes: Route[] = [
  { path: APPS, methods: { GET: list, POST: create } },
  { path: `${APPS}/:key`, methods: { GET: show, PATCH: change, DELETE: remove } },
  { path: `${APPS}/:key/secret`, methods: { GET: reveal, POST: rotate } },
];
