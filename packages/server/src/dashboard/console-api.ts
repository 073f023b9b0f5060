/**
 * The live console (docs/dashboard.md, "Live console"): an app's traffic as it happens on every node,
 * as Server-Sent Events, filtered here by room, user and event. The tap (dashboard/console-tap.ts) builds
 * entries only while a console watches the app.
 */
import type { IncomingMessage } from 'node:http';
import { LIMITS } from '@realtime/protocol';
import type { ConsoleEnd, ConsoleFilter, ConsoleSink } from './console-tap.js';
import { Refusal } from './refusal.js';
import { DASHBOARD_PATH, type Handler, queryNames, type Route, signedIn } from './request.js';

/** Consoles one node streams at once: each costs every watched app's traffic a JSON text. */
export const MAX_CONSOLES = 20;
/** A comment this often keeps proxies (and the page) from taking a quiet stream for a dead one. */
export const KEEPALIVE_MS = 15_000;
/** How long a refused console is asked to wait before trying again. */
const BUSY_RETRY_S = 5;
/** The page's EventSource reconnects this long after the stream broke. */
const RECONNECT_MS = 3_000;

/** The last event of a console whose app was deleted (an `end` event: not an entry). */
const APP_DELETED = JSON.stringify({ reason: 'app_deleted', message: 'the app was deleted' });

const FILTERS = { room: LIMITS.roomNameBytes, user: LIMITS.userIdBytes, event: LIMITS.eventNameBytes } as const;

/** `?room=&user=&event=`: each optional, empty meaning any, matched exactly. */
function filterOf(req: IncomingMessage): ConsoleFilter {
  return queryNames(req, FILTERS);
}

/**
 * One console: entries written as `data: <json>` events while the socket takes them. When it does
 * not (the reader is slow), entries are dropped and counted, and a `dropped` entry with the count
 * goes first once it drained: memory per console stays at one socket buffer.
 */
const stream: Handler = async (req, res, deps, [key = '']) => {
  req.resume();
  const session = signedIn(req, deps);
  const filter = filterOf(req);
  if ((await deps.storedApps.get(key)) === undefined) throw new Refusal(404, 'no_app', 'no app has this key');
  if (deps.console.consoles >= MAX_CONSOLES) {
    throw new Refusal(429, 'busy', `this node streams ${MAX_CONSOLES} live consoles already: close one first`, {
      'Retry-After': String(BUSY_RETRY_S),
    });
  }

  let started = false;
  let blocked = false;
  let dropped = 0;
  let ended = false;
  let endedEarly: ConsoleEnd | undefined;
  let stop: (() => Promise<void>) | undefined;
  let keepalive: NodeJS.Timeout | undefined;
  let sessionEnd: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;
  const write = (text: string): void => {
    if (!res.write(text)) blocked = true;
  };
  const sink: ConsoleSink = {
    filter,
    deliver: (_entry, json) => {
      // Entries before the stream began are not this console's.
      if (!started || ended) return;
      if (blocked) dropped++;
      else write(`data: ${json}\n\n`);
    },
    end: (reason) => {
      // Before the stream began: answered once the tap's open returns, as a refusal.
      if (!started) {
        endedEarly = reason;
        return;
      }
      // Said before the end, so the page stops instead of opening the stream again.
      if (reason === 'app_deleted' && !ended) write(`event: end\ndata: ${APP_DELETED}\n\n`);
      res.end();
    },
  };
  const finish = (): void => {
    if (ended) return;
    ended = true;
    clearInterval(keepalive);
    clearTimeout(sessionEnd);
    unwatch?.();
    // Never rejects: a failure to tell the other nodes is logged, and their watch runs out.
    void stop?.();
  };
  res.on('close', finish);
  // Every node is told before the stream begins; a broker that cannot take it answers 503.
  stop = await deps.console.open(key, sink);
  if (ended) {
    void stop();
    return;
  }
  if (endedEarly !== undefined) {
    void stop();
    throw endedEarly === 'app_deleted'
      ? new Refusal(404, 'no_app', 'no app has this key')
      : new Refusal(503, 'unavailable', 'the service is stopping');
  }
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    // A proxy (nginx) passes each entry on at once instead of buffering the stream.
    'X-Accel-Buffering': 'no',
  });
  write(`retry: ${RECONNECT_MS}\n: open\n\n`);
  started = true;
  res.on('drain', () => {
    blocked = false;
    if (dropped === 0 || ended) return;
    const count = dropped;
    dropped = 0;
    write(`data: ${JSON.stringify({ at: deps.now(), kind: 'dropped', count })}\n\n`);
  });
  keepalive = setInterval(() => {
    if (!blocked) write(': keepalive\n\n');
  }, KEEPALIVE_MS);
  keepalive.unref();
  // The stream lives no longer than the session that opened it; the page then finds it signed out.
  sessionEnd = setTimeout(() => res.end(), Math.max(0, session.expiresMs - deps.now()));
  sessionEnd.unref();
  // Nor past its sign-out, on this node or another.
  unwatch = deps.sessions.watch(session, () => res.end());
};

export const consoleRoutes: Route[] = [{ path: `${DASHBOARD_PATH}/api/apps/:key/console`, methods: { GET: stream } }];
