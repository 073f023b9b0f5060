/** Signing in and out of the dashboard (docs/dashboard.md, "Sign-in"). */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { passwordMatches } from '../config/password-hash.js';
import { clientAddress } from '../http/client-address.js';
import { CheckQueue } from './check-queue.js';
import type { DashboardDeps } from './deps.js';
import { Refusal } from './refusal.js';
import {
  changing,
  checkOrigin,
  cookieOf,
  DASHBOARD_PATH,
  type Handler,
  ok,
  overHttps,
  type Route,
  readJsonObject,
  signedIn,
} from './request.js';
import { DEVICE_COOKIE, DEVICE_SECONDS, SESSION_COOKIE, SESSION_SECONDS } from './session.js';

const BODY_BYTES = 4096;
/** Wrong passwords one address may try: 5, and one more every 3 minutes. */
const TRIES = { burst: 5, perSecond: 1 / 180 } as const;
/** A sign-in of one address holds its slot this long at most: its wait for a turn and its check (~50 ms). */
const CHECK_MS = 10_000;
/**
 * Password checks one node runs at once, over every address: scrypt takes 16 MB and a thread of
 * libuv's four, which file reads and webhook DNS lookups share. The others wait their turn.
 */
export const NODE_CHECKS = 2;
/** Addresses whose checks may wait for a turn on one node (a wait of about 64 × 25 ms at most). */
export const NODE_WAITING = 64;

/** This node's password checks: NODE_CHECKS at once, `waiting` addresses queued. */
export function newCheckQueue(waiting = NODE_WAITING): CheckQueue {
  return new CheckQueue({ running: NODE_CHECKS, waiting });
}

function cookieHeader(value: string, maxAge: number, secure: boolean, name = SESSION_COOKIE): string {
  const flags = `Path=${DASHBOARD_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict`;
  return `${name}=${value}; ${flags}${secure ? '; Secure' : ''}`;
}

async function readPassword(req: IncomingMessage): Promise<string> {
  const body = await readJsonObject(req, BODY_BYTES, '{ "password": <string> }');
  const password = body.password;
  // A missing password is a wrong one: it takes the same path, and a try.
  if (password === undefined) return '';
  if (typeof password !== 'string') throw new Refusal(400, 'bad_request', 'the password must be a string');
  return password;
}

const locked = (waitMs: number) =>
  new Refusal(429, 'locked', 'too many wrong passwords from this address: wait before trying again', {
    'Retry-After': String(Math.max(1, Math.ceil(waitMs / 1000))),
  });

/** Not `locked`: the address has tries left; its other sign-in ends within a turn or so. */
const checkingAlready = () =>
  new Refusal(503, 'busy', 'another sign-in from this address is being checked: try again in a second', {
    'Retry-After': '1',
  });

const busy = () =>
  new Refusal(503, 'busy', 'this node is checking many sign-ins: try again in a second', { 'Retry-After': '1' });

const signIn: Handler = async (req, res, deps) => {
  checkOrigin(req);
  const password = await readPassword(req);
  const address = clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], deps.trusted);
  const known = await deps.sessions.knowsDevice(cookieOf(req, DEVICE_COOKIE), deps.now());
  await checkPassword(deps, address, password, known);
  const { cookie, csrf, device } = await deps.sessions.issue(deps.now());
  const secure = overHttps(req, deps.trusted);
  res.setHeader('Set-Cookie', [
    cookieHeader(cookie, SESSION_SECONDS, secure),
    cookieHeader(device, DEVICE_SECONDS, secure, DEVICE_COOKIE),
  ]);
  ok(res, { csrf });
};

/**
 * The password against the hash, in named stages: an address out of tries is refused before it
 * takes anything (a locked address flooding costs one store read per request, no turn); then one
 * check at a time per address over every node, its tries read again; then a turn among this
 * node's checks, for scrypt only (a `known` browser's ahead of addresses never seen); then a wrong
 * password takes a try.
 */
async function checkPassword(deps: DashboardDeps, address: string, password: string, known: boolean): Promise<void> {
  const key = `dashboard-signin:${address}`;
  const wait = await deps.limits.peek(key, TRIES.perSecond, TRIES.burst, deps.now());
  if (wait > 0) throw locked(wait);
  // One check at a time per address, on every node: a burst of guesses cannot all pass the count
  // before the first wrong one is taken from it.
  const slot = randomUUID();
  if (!(await deps.limits.acquire(`${key}:checking`, slot, 1, CHECK_MS, deps.now()))) throw checkingAlready();
  try {
    // Read again now that the address's slot is held: a check of another node may have ended.
    const left = await deps.limits.peek(key, TRIES.perSecond, TRIES.burst, deps.now());
    if (left > 0) throw locked(left);
    const turn = deps.checks.enter(address, known);
    if (turn === 'queued') throw checkingAlready();
    const end = turn === 'full' ? turn : await turn;
    if (end === 'full') throw busy();
    // The turn is held for scrypt alone, no store call.
    let matches: boolean;
    try {
      matches = await passwordMatches(deps.password, password);
    } finally {
      end();
    }
    if (!matches) {
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
}

const session: Handler = async (req, res, deps) => {
  req.resume();
  ok(res, { csrf: signedIn(req, deps).csrf });
};

/** Ends the session in the store (every node refuses it from now on), then clears the cookie. */
const signOut: Handler = async (req, res, deps) => {
  req.resume();
  await deps.sessions.end(changing(req, deps));
  ok(res, {}, { 'Set-Cookie': cookieHeader('', 0, overHttps(req, deps.trusted)) });
};

export const sessionRoutes: Route[] = [
  { path: `${DASHBOARD_PATH}/api/session`, methods: { GET: session, POST: signIn, DELETE: signOut } },
];
