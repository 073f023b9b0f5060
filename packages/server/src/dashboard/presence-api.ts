/**
 * An app's online users and occupied rooms, over every node (docs/dashboard.md, "Online users and
 * rooms"): one bounded page at a time, by name, read from the presence store's per-app listings.
 */
import type { IncomingMessage } from 'node:http';
import { LIMITS } from '@realtime/protocol';
import type { NameRange } from '../engines/types.js';
import type { DashboardDeps } from './deps.js';
import { Refusal } from './refusal.js';
import { DASHBOARD_PATH, type Handler, ok, queryNames, type Route, signedIn } from './request.js';

/** Names per answer: enough for a screen, small enough that a busy app's listing stays cheap. */
export const LISTING_LIMIT = 200;

/** The listing's range from `?after=&prefix=` (both optional, each a name of at most 200 bytes). */
function rangeOf(req: IncomingMessage): NameRange {
  const bound = LIMITS.roomNameBytes;
  return { limit: LISTING_LIMIT, ...queryNames(req, { after: bound, prefix: bound }) };
}

async function appKey(deps: DashboardDeps, key: string): Promise<string> {
  if ((await deps.storedApps.get(key)) === undefined) throw new Refusal(404, 'no_app', 'no app has this key');
  return key;
}

const users: Handler = async (req, res, deps, [key = '']) => {
  req.resume();
  signedIn(req, deps);
  const range = rangeOf(req);
  ok(res, await deps.presence.onlineUsers(await appKey(deps, key), range));
};

const rooms: Handler = async (req, res, deps, [key = '']) => {
  req.resume();
  signedIn(req, deps);
  const range = rangeOf(req);
  ok(res, await deps.presence.occupiedRooms(await appKey(deps, key), range));
};

export const presenceRoutes: Route[] = [
  { path: `${DASHBOARD_PATH}/api/apps/:key/users`, methods: { GET: users } },
  { path: `${DASHBOARD_PATH}/api/apps/:key/rooms`, methods: { GET: rooms } },
];
