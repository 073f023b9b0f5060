/**
 * An app's webhooks as the dashboard shows them (docs/dashboard.md, "Webhooks"): the test, the
 * delivery log and resend answer what the API answers (the service's own Webhooks), one batch with
 * its events, and the tries of the last minutes by outcome.
 */
import type { IncomingMessage } from 'node:http';
import { ERRORS, type ErrorCode } from '@realtime/protocol';
import type { App, TryOutcome } from '../engines/types.js';
import { readBody } from '../http/body.js';
import { TRY_OUTCOMES } from '../webhooks/try-outcome.js';
import { ResendRefused } from '../webhooks/webhooks.js';
import type { DashboardDeps } from './deps.js';
import { Refusal } from './refusal.js';
import {
  bodyHeaders,
  changing,
  DASHBOARD_PATH,
  type Handler,
  ok,
  queryNames,
  type Route,
  signedIn,
} from './request.js';

const BODY_BYTES = 16_384;
const MINUTE_MS = 60_000;
/** The chart reaches back a day at most: what the stores keep. */
const MAX_MINUTES = 1440;
const DEFAULT_MINUTES = 60;

/** A refusal with the API's code and status. */
const apiRefusal = (code: ErrorCode, message: string) => new Refusal(ERRORS[code].status, code, message);

async function appOf(deps: DashboardDeps, key: string | undefined): Promise<App> {
  const app = key === undefined ? undefined : await deps.storedApps.get(key);
  if (!app) throw new Refusal(404, 'no_app', 'no app has this key');
  return app;
}

/** The API's conditions for its webhook endpoints: the plan includes webhooks, an address is set. */
function hooked(app: App): void {
  if (!app.features.includes('webhooks')) {
    throw apiRefusal('not_included', "the app's plan does not include webhooks");
  }
  if (app.webhook === '') throw apiRefusal('no_webhook', 'the app has no webhook address set');
}

/** Test and resend take no body; an empty JSON object is tolerated (as by the API). */
async function noBody(req: IncomingMessage): Promise<void> {
  let body: Buffer;
  try {
    body = await readBody(req, BODY_BYTES);
  } catch (error) {
    throw new Refusal(
      400,
      'bad_request',
      `the body must be empty or {}, at most ${BODY_BYTES} bytes`,
      bodyHeaders(error),
    );
  }
  if (body.length === 0) return;
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Refusal(400, 'bad_request', 'the body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length > 0) {
    throw new Refusal(400, 'bad_request', 'this request takes no body (or {})');
  }
}

const test: Handler = async (req, res, deps, [key]) => {
  changing(req, deps);
  await noBody(req);
  const app = await appOf(deps, key);
  hooked(app);
  ok(res, await deps.webhooks.testReport(app.key));
};

const list: Handler = async (req, res, deps, [key]) => {
  req.resume();
  signedIn(req, deps);
  const app = await appOf(deps, key);
  hooked(app);
  ok(res, { deliveries: await deps.webhooks.list(app.key) });
};

/** One batch and its events, whatever the app's address or plan now: it shows what was sent. */
const batch: Handler = async (req, res, deps, [key, id]) => {
  req.resume();
  signedIn(req, deps);
  const app = await appOf(deps, key);
  const found = id === undefined ? undefined : await deps.webhooks.delivery(app.key, id);
  if (!found) throw new Refusal(404, 'no_batch', 'the app has no webhook batch with this id');
  const { events } = JSON.parse(found.body) as { events: unknown[] };
  ok(res, { delivery: found.delivery, events });
};

const resend: Handler = async (req, res, deps, [key, id]) => {
  changing(req, deps);
  await noBody(req);
  const app = await appOf(deps, key);
  hooked(app);
  try {
    ok(res, await deps.webhooks.resendReport(app.key, id ?? ''));
  } catch (error) {
    if (!(error instanceof ResendRefused)) throw error;
    // The API's not_found is the dashboard's no_batch: its not_found means no such address.
    if (error.code === 'not_found') throw new Refusal(404, 'no_batch', 'the app has no webhook batch with this id');
    throw apiRefusal(error.code, error.message);
  }
};

function minutesAsked(req: IncomingMessage): number {
  const given = queryNames(req, { minutes: 4 }).minutes;
  if (given === undefined) return DEFAULT_MINUTES;
  if (!/^\d{1,4}$/.test(given) || Number(given) < 1 || Number(given) > MAX_MINUTES) {
    throw new Refusal(400, 'bad_request', `minutes must be a whole number from 1 to ${MAX_MINUTES}`);
  }
  return Number(given);
}

/** Every minute of the window, oldest first, each with every outcome (0 when none). */
const tries: Handler = async (req, res, deps, [key]) => {
  req.resume();
  signedIn(req, deps);
  const minutes = minutesAsked(req);
  const app = await appOf(deps, key);
  const last = Math.floor(deps.now() / MINUTE_MS) * MINUTE_MS;
  const first = last - (minutes - 1) * MINUTE_MS;
  const counted = new Map((await deps.webhooks.tryCounts(app.key, first)).map((m) => [m.at, m.outcomes]));
  const out = [];
  for (let at = first; at <= last; at += MINUTE_MS) {
    const got = counted.get(at) ?? {};
    const outcomes = Object.fromEntries(TRY_OUTCOMES.map((o) => [o, got[o] ?? 0])) as Record<TryOutcome, number>;
    out.push({ at, outcomes });
  }
  ok(res, { minutes: out });
};

const base = `${DASHBOARD_PATH}/api/apps/:key/webhooks`;

/** `tries` and `test` before `:id`: the first route that matches answers. */
export const webhookRoutes: Route[] = [
  { path: base, methods: { GET: list } },
  { path: `${base}/test`, methods: { POST: test } },
  { path: `${base}/tries`, methods: { GET: tries } },
  { path: `${base}/:id`, methods: { GET: batch } },
  { path: `${base}/:id/resend`, methods: { POST: resend } },
];
