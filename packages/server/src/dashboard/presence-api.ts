/**
 * An app's online users and occupied rooms, over every node (docs/dashboard.md, "Online users and
 * rooms"): one bounded page at a time, by name, read from the presence store's per-app listings.
 */
import type { IncomingMessage } from 'node:http';
import { LIMITS, utf8Length } from '@realtime/protocol';
import { ApiError } from '../core/api-error.js';
import type { NameRange } from '../engines/types.js';
import { parseQuery } from '../http/query.js';
import type { DashboardDeps } from './deps.js';
import { Refusal } from './refusal.js';
import { DASHBOARD_PATH, type Handler, ok, type Route, signedIn } from './request.js';

/** Names per answer: enough for a screen, small enough that a busy app's listing stays cheap. */
export const LISTING_LIMIT = 200;

/** The listing's range from `?after=&prefix=` (both optional, each a name of at most 200 bytes). */
function rangeOf(req: IncomingMessage): NameRange {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  let params: Map<string, string>;
  try {
    params = parseQuery(q < 0 ? '' : url.slice(q + 1), ['after', 'prefix']);
  } catch (error) {
    if (error instanceof ApiError) throw new Refusal(400, 'bad_request', error.message);
    throw error;
  }
  const range: NameRange = { limit: LISTING_LIMIT };
  for (const name of ['after', 'prefix'] as const) {
    const raw = params.get(name);
    if (raw === undefined || raw === '') continue;
    let value: string;
    try {
      value = decodeURIComponent(raw);
    } catch {
      throw new Refusal(400, 'bad_request', `${name} has bad percent-encoding`);
    }
    const bytes = utf8Length(value);
    if (bytes < 0 || bytes > LIMITS.roomNameBytes) {
      throw new Refusal(400, 'bad_request', `${name} must be UTF-8 of at most ${LIMITS.roomNameBytes} bytes`);
    }
    range[name] = value;
  }
  return range;
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
