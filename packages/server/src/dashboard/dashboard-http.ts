import { randomUUID } from 'node:crypto';
/**
 * The dashboard's HTTP side (docs/dashboard.md): `/dashboard/api/...` with a signed-in operator's
 * session. It answers every `/dashboard` address, `not_found` when the dashboard is off, so no
 * other handler ever sees one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { StoreError } from '../engines/store-error.js';
import type { AppStore, LimitStore } from '../engines/types.js';
import { sendJson } from '../http/answer.js';
import { readBody } from '../http/body.js';
import { clientAddress, parseAddress, type TrustedProxies } from '../http/client-address.js';
import { type PasswordHash, passwordMatches } from './password.js';
import { SESSION_COOKIE, SESSION_SECONDS, type Session, type SessionKeys } from './session.js';

export const DASHBOARD_PATH = '/dashboard';
const BODY_BYTES = 4096;
/** Wrong passwords one address may try: 5, and one more every 3 minutes. */
const TRIES = { burst: 5, perSecond: 1 / 180 } as const;
/** A sign-in check of one address holds its slot this long at most (scrypt takes about 50 ms). */
const CHECK_MS = 10_000;

export interface DashboardDeps {
  password: PasswordHash;
  keys: SessionKeys;
  apps: Pick<AppStore, 'list'>;
  limits: LimitStore;
  trusted: TrustedProxies;
  log: Logger;
  now: () => number;
}

/** A refusal of the dashboard: its codes are its own, in the API's error shape. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse, deps: DashboardDeps) => Promise<void>;

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
    const methods = deps !== undefined && Object.hasOwn(ROUTES, path) ? ROUTES[path] : undefined;
    if (methods === undefined) {
      req.resume();
      throw new Refusal(404, 'not_found', `no endpoint at ${JSON.stringify(path.slice(0, 60))}`);
    }
    const method = req.method ?? '';
    const handler = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (handler === undefined || deps === undefined) {
      req.resume();
      const allow = Object.keys(methods).join(', ');
      throw new Refusal(405, 'bad_method', `${path} takes ${allow}, not ${req.method}`, { Allow: allow });
    }
    await handler(req, res, deps);
  } catch (error) {
    if (error instanceof Refusal) {
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

function ok(res: ServerResponse, body: object, headers: Record<string, string> = {}): void {
  sendJson(res, 200, JSON.stringify({ ok: true, ...body }), { 'Cache-Control': 'no-store', ...headers });
}

/** The first value of a cookie in the request's Cookie header. */
function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether the request reached us over HTTPS: a TLS socket, or a trusted proxy saying so. */
function overHttps(req: IncomingMessage, trusted: TrustedProxies): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true;
  const peer = parseAddress(req.socket.remoteAddress ?? '');
  const proto = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0]?.trim().toLowerCase();
  return peer !== undefined && trusted.has(peer) && first === 'https';
}

function cookieHeader(value: string, maxAge: number, secure: boolean): string {
  const flags = `Path=${DASHBOARD_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict`;
  return `${SESSION_COOKIE}=${value}; ${flags}${secure ? '; Secure' : ''}`;
}

/** A browser's Origin, when it sent one, must be this very host: another site cannot act through it. */
function checkOrigin(req: IncomingMessage): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host === undefined || host !== req.headers.host?.toLowerCase()) {
    throw new Refusal(403, 'bad_csrf', 'the request came from another origin than the dashboard');
  }
}

function signedIn(req: IncomingMessage, deps: DashboardDeps): Session {
  const session = deps.keys.read(cookieOf(req, SESSION_COOKIE), deps.now());
  if (!session) throw new Refusal(401, 'signed_out', 'sign in to the dashboard first');
  return session;
}

/** A signed-in operator's change: the session's CSRF token and this origin. */
function changing(req: IncomingMessage, deps: DashboardDeps): Session {
  const session = signedIn(req, deps);
  const token = req.headers['x-csrf-token'];
  if (!deps.keys.csrfMatches(session, Array.isArray(token) ? token[0] : token)) {
    throw new Refusal(403, 'bad_csrf', 'a change needs the X-CSRF-Token header of the session');
  }
  checkOrigin(req);
  return session;
}

async function readPassword(req: IncomingMessage): Promise<string> {
  let body: Buffer;
  try {
    body = await readBody(req, BODY_BYTES);
  } catch {
    throw new Refusal(
      400,
      'bad_request',
      `the body must be JSON { "password": <string> } of at most ${BODY_BYTES} bytes`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Refusal(400, 'bad_request', 'the body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Refusal(400, 'bad_request', 'the body must be JSON { "password": <string> }');
  }
  const password = (value as { password?: unknown }).password;
  // A missing password is a wrong one: it takes the same path, and a try.
  if (password === undefined) return '';
  if (typeof password !== 'string') throw new Refusal(400, 'bad_request', 'the password must be a string');
  return password;
}

const signIn: Handler = async (req, res, deps) => {
  checkOrigin(req);
  const password = await readPassword(req);
  const key = `dashboard-signin:${clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted)}`;
  const locked = (waitMs: number) =>
    new Refusal(429, 'locked', 'too many wrong passwords from this address: wait before trying again', {
      'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))),
    });
  // One check at a time per address, on every node: a burst of guesses cannot all pass the count
  // before the first wrong one is taken from it.
  const slot = randomUUID();
  if (!(await deps.limits.acquire(`${key}:checking`, slot, 1, CHECK_MS, deps.now()))) {
    throw new Refusal(429, 'locked', 'another sign-in from this address is being checked: try again in a second', {
      'Retry-After': '1',
    });
  }
  try {
    const wait = await deps.limits.peek(key, TRIES.perSecond, TRIES.burst, deps.now());
    if (wait > 0) throw locked(wait);
    if (!(await passwordMatches(deps.password, password))) {
      await deps.limits.take(key, TRIES.perSecond, TRIES.burst, deps.now());
      deps.log.warn({ address: key }, 'a wrong dashboard password');
      throw new Refusal(401, 'wrong_password', 'the password is not the dashboard’s');
    }
  } finally {
    // A release that fails leaves the slot to lapse after CHECK_MS.
    try {
      await deps.limits.release(`${key}:checking`, slot);
    } catch (error) {
      deps.log.warn({ err: error }, 'releasing a dashboard sign-in check failed');
    }
  }
  const { cookie, csrf } = deps.keys.issue(deps.now());
  ok(res, { csrf }, { 'Set-Cookie': cookieHeader(cookie, SESSION_SECONDS, overHttps(req, deps.trusted)) });
};

const session: Handler = async (req, res, deps) => {
  req.resume();
  ok(res, { csrf: signedIn(req, deps).csrf });
};

const signOut: Handler = async (req, res, deps) => {
  req.resume();
  changing(req, deps);
  ok(res, {}, { 'Set-Cookie': cookieHeader('', 0, overHttps(req, deps.trusted)) });
};

const apps: Handler = async (req, res, deps) => {
  req.resume();
  signedIn(req, deps);
  const list = await deps.apps.list();
  ok(res, { apps: list.map(({ key, name, features, webhook }) => ({ key, name, features, webhook })) });
};

const ROUTES: Record<string, Record<string, Handler>> = {
  [`${DASHBOARD_PATH}/api/session`]: { GET: session, POST: signIn, DELETE: signOut },
  [`${DASHBOARD_PATH}/api/apps`]: { GET: apps },
};
