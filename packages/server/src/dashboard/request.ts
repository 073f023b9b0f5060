/**
 * What every dashboard endpoint shares: answers, the session check, CSRF and JSON bodies
 * (docs/dashboard.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { utf8Length } from '@realtime/protocol';
import { sendJson } from '../http/answer.js';
import { ApiError } from '../http/api-error.js';
import { readBody } from '../http/body.js';
import { parseAddress, type TrustedProxies } from '../http/client-address.js';
import { parseQuery } from '../http/query.js';
import type { DashboardDeps } from './deps.js';
import { Refusal } from './refusal.js';
import { csrfMatches, SESSION_COOKIE, type Session } from './session.js';

export const DASHBOARD_PATH = '/dashboard';

/** One endpoint: `params` are the path's `:name` segments, in order, already URI-decoded. */
export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  deps: DashboardDeps,
  params: string[],
) => Promise<void>;

/** An address under /dashboard/api and its methods; `:name` segments match one path segment each. */
export interface Route {
  path: string;
  methods: Record<string, Handler>;
}

export function ok(res: ServerResponse, body: object, headers: Record<string, string> = {}, status = 200): void {
  sendJson(res, status, JSON.stringify({ ok: true, ...body }), { 'Cache-Control': 'no-store', ...headers });
}

/** The first value of a cookie in the request's Cookie header. */
export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Whether the request reached us over HTTPS: a TLS socket, or a trusted proxy saying so. */
export function overHttps(req: IncomingMessage, trusted: TrustedProxies): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true;
  const peer = parseAddress(req.socket.remoteAddress ?? '');
  const proto = req.headers['x-forwarded-proto'];
  const first = (Array.isArray(proto) ? proto[0] : proto)?.split(',')[0]?.trim().toLowerCase();
  return peer !== undefined && trusted.has(peer) && first === 'https';
}

/** A browser's Origin, when it sent one, must be this very host: another site cannot act through it. */
export function checkOrigin(req: IncomingMessage): void {
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

/** Sessions read by `authenticate`, per request. */
const authenticated = new WeakMap<IncomingMessage, Session>();

/**
 * Reads the request's session once, before its handler runs: the cookie's signature and times,
 * then the store's record (signed out on any node ends it). The handlers' `signedIn` then answers
 * without a store call. A store that fails answers 503 (a StoreError).
 */
export async function authenticate(req: IncomingMessage, deps: DashboardDeps): Promise<void> {
  const session = await deps.sessions.read(cookieOf(req, SESSION_COOKIE), deps.now());
  if (session !== undefined) authenticated.set(req, session);
}

/** The request's open session (read by `authenticate`), else 401 signed_out. */
export function signedIn(req: IncomingMessage, deps: DashboardDeps): Session {
  const session = authenticated.get(req);
  if (!session || session.expiresMs <= deps.now()) {
    throw new Refusal(401, 'signed_out', 'sign in to the dashboard first');
  }
  return session;
}

/** A signed-in operator's change: the session's CSRF token and this origin. */
export function changing(req: IncomingMessage, deps: DashboardDeps): Session {
  const session = signedIn(req, deps);
  const token = req.headers['x-csrf-token'];
  if (!csrfMatches(session, Array.isArray(token) ? token[0] : token)) {
    throw new Refusal(403, 'bad_csrf', 'a change needs the X-CSRF-Token header of the session');
  }
  checkOrigin(req);
  return session;
}

/** The request's body as a JSON object of at most `maxBytes`; `shape` names it in the refusal. */
export async function readJsonObject(
  req: IncomingMessage,
  maxBytes: number,
  shape: string,
): Promise<Record<string, unknown>> {
  let body: Buffer;
  try {
    body = await readBody(req, maxBytes);
  } catch (error) {
    throw new Refusal(
      400,
      'bad_request',
      `the body must be JSON ${shape} of at most ${maxBytes} bytes`,
      bodyHeaders(error),
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Refusal(400, 'bad_request', 'the body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Refusal(400, 'bad_request', `the body must be JSON ${shape}`);
  }
  return value as Record<string, unknown>;
}

/**
 * The query's names, each optional and at most `maxBytes[name]` of UTF-8 once decoded; an empty
 * value is left out (it means "any"). Another name, a name twice or bad encoding: 400 bad_request.
 */
export function queryNames<K extends string>(
  req: IncomingMessage,
  maxBytes: Record<K, number>,
): Partial<Record<K, string>> {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const names = Object.keys(maxBytes) as K[];
  let params: Map<string, string>;
  try {
    params = parseQuery(q < 0 ? '' : url.slice(q + 1), names);
  } catch (error) {
    if (error instanceof ApiError) throw new Refusal(400, 'bad_request', error.message);
    throw error;
  }
  const found: Partial<Record<K, string>> = {};
  for (const name of names) {
    const raw = params.get(name);
    if (raw === undefined || raw === '') continue;
    let value: string;
    try {
      value = decodeURIComponent(raw);
    } catch {
      throw new Refusal(400, 'bad_request', `${name} has bad percent-encoding`);
    }
    const bytes = utf8Length(value);
    if (bytes < 0 || bytes > maxBytes[name]) {
      throw new Refusal(400, 'bad_request', `${name} must be UTF-8 of at most ${maxBytes[name]} bytes`);
    }
    found[name] = value;
  }
  return found;
}

/** A body refused as too large closes the connection (its headers say so): the rest is not read. */
export function bodyHeaders(error: unknown): Record<string, string> {
  return error instanceof ApiError && error.headers !== undefined ? error.headers : {};
}
