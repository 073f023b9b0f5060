/**
 * The dashboard's HTTP side (docs/dashboard.md): its page under `/dashboard/` and its API under
 * `/dashboard/api/...` for a signed-in operator. It answers every `/dashboard` address,
 * `not_found` when the dashboard is off, so no other handler ever sees one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StoreError } from '../engines/store-error.js';
import { sendJson } from '../http/answer.js';
import { appRoutes } from './apps-api.js';
import { consoleRoutes } from './console-api.js';
import type { DashboardDeps } from './deps.js';
import { presenceRoutes } from './presence-api.js';
import { Refusal } from './refusal.js';
import { authenticate, changing, DASHBOARD_PATH, type Handler, type Route } from './request.js';
import { sessionRoutes } from './session-api.js';
import { isStaticPath, serveStatic } from './static-files.js';
import { statsRoutes } from './stats-api.js';
import { webhookRoutes } from './webhooks-api.js';

const SESSION_PATH = `${DASHBOARD_PATH}/api/session`;

export type { DashboardDeps } from './deps.js';
export { DASHBOARD_PATH } from './request.js';

const ROUTES: Route[] = [
  ...sessionRoutes,
  ...appRoutes,
  ...webhookRoutes,
  ...presenceRoutes,
  ...statsRoutes,
  ...consoleRoutes,
];

/** A route's path split into segments, `:name` ones matching any single segment. */
const COMPILED = ROUTES.map((route) => ({ route, segments: route.path.split('/') }));

function match(path: string): { route: Route; params: string[] } | undefined {
  const segments = path.split('/');
  for (const { route, segments: want } of COMPILED) {
    if (want.length !== segments.length) continue;
    const params: string[] = [];
    let fits = true;
    for (let i = 0; i < want.length && fits; i++) {
      const w = want[i] as string;
      const s = segments[i] as string;
      if (w.startsWith(':')) {
        let value: string;
        try {
          value = decodeURIComponent(s);
        } catch {
          value = '';
        }
        if (value === '') fits = false;
        else params.push(value);
      } else if (w !== s) fits = false;
    }
    if (fits) return { route, params };
  }
  return undefined;
}

/** Takes every `/dashboard` request; false for any other path. `deps` undefined: the dashboard is off. */
export function handleDashboardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  deps: DashboardDeps | undefined,
): boolean {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`)) return false;
  void answer(req, res, path, deps);
  return true;
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  deps: DashboardDeps | undefined,
): Promise<void> {
  try {
    if (deps !== undefined && isStaticPath(path)) return await serveStatic(req, res, path);
    const found = deps === undefined ? undefined : match(path);
    if (found === undefined) {
      req.resume();
      throw new Refusal(404, 'not_found', `no endpoint at ${JSON.stringify(path.slice(0, 60))}`);
    }
    const method = req.method ?? '';
    const { methods } = found.route;
    const handler: Handler | undefined = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (handler === undefined || deps === undefined) {
      req.resume();
      const allow = Object.keys(methods).join(', ');
      throw new Refusal(405, 'bad_method', `${path} takes ${allow}, not ${req.method}`, { Allow: allow });
    }
    // Signing in is the one request made without a session (it checks the origin itself). Every
    // other reads its session here, and every change is checked here as well as in its handler,
    // so a new endpoint cannot forget it.
    if (!(found.route.path === SESSION_PATH && method === 'POST')) {
      await authenticate(req, deps);
      if (method !== 'GET' && method !== 'HEAD') changing(req, deps);
    }
    await handler(req, res, deps, found.params);
  } catch (error) {
    if (res.headersSent) {
      // A stream (the live console) that failed after it began: end it; the page reconnects.
      if (!(error instanceof Refusal)) deps?.log.warn({ err: error, path }, 'a dashboard stream failed');
      res.destroy();
      return;
    }
    if (error instanceof Refusal) {
      req.resume();
      sendJson(res, error.status, JSON.stringify({ ok: false, error: error.code, message: error.message }), {
        'Cache-Control': 'no-store',
        ...error.headers,
      });
      return;
    }
    if (error instanceof StoreError) {
      const body = { ok: false, error: 'unavailable', message: 'the service could not reach its storage; try again' };
      sendJson(res, 503, JSON.stringify(body), { 'Cache-Control': 'no-store' });
      return;
    }
    deps?.log.error({ err: error, path }, 'dashboard request failed');
    sendJson(res, 500, JSON.stringify({ ok: false, error: 'internal', message: 'The service failed; try again.' }));
  }
}
