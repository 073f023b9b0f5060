import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { CachedAppStore } from './apps/cached-app-store.js';
import { RateLimiter } from './apps/rate-limit.js';
import { callModule } from './calls/call-module.js';
import { CallService } from './calls/call-service.js';
import type { CallOptions } from './calls/options.js';
import { parsePasswordHash } from './config/password-hash.js';
import { AskService } from './core/ask.js';
import { ConsoleTap } from './core/console-tap.js';
import { type DepartureOptions, Departures } from './core/departures.js';
import { Emitter } from './core/emit.js';
import type { EventSink } from './core/events.js';
import { Hub } from './core/hub.js';
import { NodeRegistry } from './core/node-registry.js';
import { PageSignals } from './core/page-signals.js';
import { UserPresence } from './core/user-presence.js';
import { type DashboardDeps, handleDashboardRequest } from './dashboard/dashboard-http.js';
import { newCheckQueue } from './dashboard/session-api.js';
import { DashboardSessions } from './dashboard/sessions.js';
import { metricSources, StatsSampler } from './dashboard/stats-sampler.js';
import type { EmbeddedStores } from './engines/embedded.js';
import { type EngineChoice, openEngine } from './engines/open-engine.js';
import type { App, AppStore } from './engines/types.js';
import type { Connection } from './gateway/connection.js';
import type { GatewayDeps } from './gateway/context.js';
import { Gateway, type GatewayOptions } from './gateway/gateway.js';
import { groupModule } from './groups/group-module.js';
import { GroupService } from './groups/group-service.js';
import { Admission, type ConnectionLimits } from './http/admission.js';
import { TrustedProxies } from './http/client-address.js';
import type { ApiDeps } from './http/context.js';
import { guardConnections, guardedServerOptions, isRequestTimeout, refuseLargeContinue } from './http/guards.js';
import { handleOpsRequest } from './http/ops.js';
import { handleApiRequest } from './http/pipeline.js';
import { createLogger, type Logger, type LogLevel } from './log.js';
import { countedBroker, countedDeliverer } from './metrics/instrument.js';
import { Metrics } from './metrics/metrics.js';
import type { StreamOptions } from './streams/options.js';
import { STREAM_CONNECT_TIMEOUT_MS, unitLimits, unitMedia } from './streams/options.js';
import { streamModule } from './streams/stream-module.js';
import { StreamService } from './streams/stream-service.js';
import { iceConfig } from './units/ice-settings.js';
import { MediaApps } from './units/media-apps.js';
import { UnitHost } from './units/unit-host.js';
import { createDeliverer } from './webhooks/deliver.js';
import type { WebhookTimings } from './webhooks/retry-policy.js';
import { Webhooks } from './webhooks/webhooks.js';

export interface ServerOptions {
  /** Calls: how long they ring, and the STUN/TURN servers pages are given. */
  calls?: CallOptions;
  /** Live streams: the addresses this node's forwarding units announce, and stream bounds. */
  streams?: StreamOptions;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Folder of the SQLite file (the embedded engine). */
  dataDir: string;
  /** Where everything is stored; default: the embedded engine in `dataDir`. */
  engine?: EngineChoice;
  /** Apps to create or replace at start. */
  apps?: App[];
  allowPrivateWebhooks?: boolean;
  logLevel?: LogLevel;
  logger?: Logger;
  /** Clock, for tests. */
  now?: () => number;
  /** How long a graceful stop waits for requests in flight. */
  drainMs?: number;
  /** Page gateway settings (heartbeats, queue bounds); the defaults are what ships. */
  gateway?: GatewayOptions;
  /** Webhook timings (batch window, retry schedule, resend window); the defaults are the spec's. */
  webhooks?: Partial<WebhookTimings>;
  /** `user.offline` (and online state) this long after a user's last page closed; default 10 s. */
  offlineDelayMs?: number;
  /** Also record app events here (tests read them); they go to the webhook queue either way. */
  events?: EventSink;
  /** Bearer token that GET /metrics asks for; none: metrics are open (bind to a private address). */
  metricsToken?: string;
  /** The dashboard (docs/dashboard.md): on with the operator password's scrypt hash, off without. */
  dashboard?: {
    passwordHash: string;
    /** Time between two stats samples (default 5 s; tests shorten it). */
    statsIntervalMs?: number;
    /** Addresses whose sign-ins may wait for a password check on this node (default 64; tests shorten it). */
    signInQueue?: number;
  };
  /** How long a node that died stays counted before others sweep its pages (default 15 s). */
  nodeLeaseMs?: number;
  /** How closes and webhook events that could not be written are tried again (core/departures.ts). */
  departures?: Partial<DepartureOptions>;
  /** On stop, how long /ready answers 503 before pages are closed and the port stops listening. */
  shutdownDelayMs?: number;
  /** DNS lookup for webhook addresses (tests stub it); default node:dns. */
  webhookLookup?: Parameters<typeof createDeliverer>[0]['lookup'];
  /** Connection caps, header timeout and trusted proxies (see docs/operations.md); asks in flight per user. */
  limits?: Partial<ServerLimits>;
  /** Wraps the stores as they are made (tests inject store failures here); default: as they are. */
  wrapStores?: (stores: EmbeddedStores) => Partial<EmbeddedStores>;
}

/** The `limits` of a server: its connection caps, and asks in flight per user (beyond: 429). */
export interface ServerLimits extends ConnectionLimits {
  maxAsksPerUser: number;
}

export interface RunningServer {
  /** `http://host:port` of the API. */
  url: string;
  host: string;
  port: number;
  log: Logger;
  /** Where app events go: the webhook queue. */
  events: EventSink;
  /** Open pages. */
  pages(): number;
  /** Closes a user's open pages from the service side (4100 by default: they reconnect); returns how many. */
  disconnectUser(app: string, user: string, code?: number): number;
  /** The Prometheus registry of this server. */
  metrics: Metrics;
  /** Whether a live console on any node watches the app, as this node knows it (its traffic is tapped). */
  watchedByConsole(app: string): boolean;
  /** The apps as stored (not cached): embedders and tests change apps through it, as the CLI does. */
  apps: AppStore;
  /** Stops taking requests, waits for those in flight, closes storage. */
  close(): Promise<void>;
}

const HISTORY_PRUNE_MS = 60_000;

/** A whole HTTP answer for a socket no handler owns; no body for HEAD. */
function rawAnswer(status: number, reason: string, code: string, message: string, head: boolean): string {
  const body = JSON.stringify({ ok: false, error: code, message });
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`;
}

/** Starts the embedded service: SQLite file in the data folder, fan-out in memory. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const log = options.logger ?? createLogger(options.logLevel ?? 'info');
  const now = options.now ?? Date.now;
  // A wrong hash stops the start before anything is opened.
  const dashboardHash = options.dashboard === undefined ? undefined : parsePasswordHash(options.dashboard.passwordHash);
  const engine = await openEngine(options.engine ?? { kind: 'embedded' }, {
    dataDir: options.dataDir,
    log,
    ...(options.offlineDelayMs === undefined ? {} : { offlineDelayMs: options.offlineDelayMs }),
    ...(options.wrapStores === undefined ? {} : { wrapStores: options.wrapStores }),
  });
  const metrics = new Metrics({
    pages: () => gateway.size,
    rooms: () => hub.roomCount,
    webhooks: () => engine.webhooks.stats(now()),
  });
  const broker = countedBroker(engine.broker, metrics);
  for (const app of options.apps ?? []) await engine.apps.upsert(app);
  // A Redis that lost its data gets the configured apps back before it serves again.
  const stopRepair = engine.onDataLost?.(async () => {
    for (const app of options.apps ?? []) await engine.apps.upsert(app);
    log.warn('the storage lost its data: the configured apps were stored again');
  });
  const apps = new CachedAppStore(engine.apps, { now });
  // The live console's tap: the engine's broker itself, so console traffic is not counted as the apps'.
  const consoleTap = new ConsoleTap({ node: engine.node, broker: engine.broker, log, now });
  await consoleTap.start();
  if (options.allowPrivateWebhooks) {
    log.warn(
      '--allow-private-webhooks is on: webhooks may go to http:// and private addresses. Never use this in production.',
    );
  }

  const deliverer = countedDeliverer(
    createDeliverer({
      allowPrivate: options.allowPrivateWebhooks === true,
      ...(options.webhooks?.answerMs === undefined ? {} : { timeoutMs: options.webhooks.answerMs }),
      ...(options.webhookLookup === undefined ? {} : { lookup: options.webhookLookup }),
    }),
    metrics,
  );
  const webhooks = new Webhooks({
    store: engine.webhooks,
    apps,
    deliverer,
    log,
    now,
    node: engine.node,
    ...(options.webhooks === undefined ? {} : { timings: options.webhooks }),
    tap: consoleTap,
  });
  const extra = options.events;
  const events: EventSink = extra
    ? {
        record: (app, event) => {
          const recorded = webhooks.record(app, event);
          // Once stored: an event the store refused (and Departures tries again) is seen once.
          if (recorded === undefined) return extra.record(app, event);
          return recorded.then(() => extra.record(app, event));
        },
        reportOf: (app, event) => webhooks.reportOf(app, event),
        reported: (app, event) => {
          webhooks.reported(app, event);
          extra.reported(app, event);
        },
      }
    : webhooks;
  // Closes and webhook events the store could not take, tried until it does.
  const departures = new Departures({
    node: engine.node,
    presence: engine.presence,
    broker,
    events,
    log,
    now,
    holds: (page) => gateway.holds(page),
    ...(options.departures === undefined ? {} : { options: options.departures }),
  });
  const users = new UserPresence({
    presence: engine.presence,
    events: departures,
    log,
    now,
    tap: consoleTap,
    ...(options.offlineDelayMs === undefined ? {} : { offlineDelayMs: options.offlineDelayMs }),
  });
  // This node's one lease; presence, calls, groups and streams each register what a dead node's pages leave.
  const nodes = new NodeRegistry({
    node: engine.node,
    nodes: engine.nodes,
    log,
    now,
    ...(options.nodeLeaseMs === undefined ? {} : { leaseMs: options.nodeLeaseMs }),
    lapsed: () => gateway.lapsed(),
  });
  nodes.onLapse('presence', (claim) => departures.sweepNode(claim));
  const ask = new AskService({
    node: engine.node,
    broker,
    presence: engine.presence,
    limits: engine.limits,
    log,
    now,
    tap: consoleTap,
    ...(options.limits?.maxAsksPerUser === undefined ? {} : { maxAsksPerUser: options.limits.maxAsksPerUser }),
  });
  await ask.start();
  // Questions of asks go to the user's open pages here; their answers go back through the AskService.
  const hub = new Hub<Connection>(broker, (question, pages) =>
    ask.deliver(
      question,
      pages.filter((page) => page.state === 'open'),
    ),
  );
  // Frames of calls, groups and streams to pages on any node.
  const signals = new PageSignals({ node: engine.node, broker, log, now, page: (id) => gateway.page(id) });
  await signals.start();
  const calls = new CallService({
    node: engine.node,
    calls: engine.calls,
    nodes,
    limits: engine.limits,
    signals,
    events,
    log,
    now,
    ...(options.calls === undefined ? {} : { options: options.calls }),
  });
  await calls.start();
  // One set of forwarding units per node, for live streams and group calls in unit mode.
  const media = unitMedia(options.streams);
  iceConfig(media); // a wrong address fails the start, not a page's first offer
  const mediaApps = new MediaApps({ list: () => engine.apps.list(), now, log });
  const units = new UnitHost({
    media,
    connectTimeoutMs: options.streams?.connectTimeoutMs ?? STREAM_CONNECT_TIMEOUT_MS,
    limits: unitLimits(options.streams),
    log,
    severalApps: () => mediaApps.several(),
  });
  const groups = new GroupService({
    units,
    node: engine.node,
    groups: engine.groups,
    nodes,
    signals,
    events,
    log,
    now,
    ...(options.calls?.ice === undefined ? {} : { ice: options.calls.ice }),
    ...(options.calls?.groupMaxPages === undefined ? {} : { maxPages: options.calls.groupMaxPages }),
    ...(options.calls?.groupUnitFrom === undefined ? {} : { unitFrom: options.calls.groupUnitFrom }),
  });
  await groups.start();
  const streams = new StreamService({
    units,
    node: engine.node,
    streams: engine.streams,
    nodes,
    signals,
    events,
    log,
    now,
    ...(options.calls?.ice === undefined ? {} : { ice: options.calls.ice }),
    ...(options.streams === undefined ? {} : { options: options.streams }),
  });
  await streams.start();
  // Counted among the living before any page opens here, once every feature registered.
  await nodes.start();
  const gatewayDeps: GatewayDeps = {
    node: engine.node,
    apps,
    hub,
    broker,
    history: engine.history,
    presence: engine.presence,
    ask,
    events,
    users,
    departures,
    log,
    now,
    traffic: metrics.traffic,
    tap: consoleTap,
  };
  const gateway = new Gateway(gatewayDeps, options.gateway, [
    callModule(gatewayDeps, calls),
    groupModule(gatewayDeps, groups),
    streamModule(gatewayDeps, streams),
  ]);
  departures.start();

  // Publications lost while the subscriber connection was down: pages resume from history (or learn
  // of the gap from `truncated`) by reconnecting.
  const stopGapListener = broker.onGap?.(() => {
    log.warn('publications may have been missed while the broker was disconnected: pages reconnect to resume');
    gateway.reconnectAll();
  });

  const deps: ApiDeps = {
    apps,
    emitter: new Emitter({ broker, now, tap: consoleTap }),
    ask,
    webhooks,
    presence: engine.presence,
    limiter: new RateLimiter(engine.limits),
    answered: (route, status, startedMs, overAppRate) => metrics.answered(route, status, startedMs, overAppRate),
    log,
    now,
  };

  let draining = false;
  const ops = {
    metrics,
    metricsToken: options.metricsToken,
    draining: () => draining,
    checkStores: () => engine.check(),
  };
  const admission = new Admission(options.limits, log);
  const dashboard: DashboardDeps | undefined =
    dashboardHash === undefined
      ? undefined
      : {
          password: dashboardHash,
          sessions: new DashboardSessions(engine.dashboardSessions, dashboardHash.text, { now }),
          checks: newCheckQueue(options.dashboard?.signInQueue),
          apps,
          storedApps: engine.apps,
          limits: engine.limits,
          trusted: new TrustedProxies(admission.limits.trustProxy),
          allowPrivateWebhooks: options.allowPrivateWebhooks === true,
          console: consoleTap,
          webhooks,
          appData: { history: engine.history, webhooks: engine.webhooks },
          presence: engine.presence,
          stats: new StatsSampler(
            metricSources(
              metrics,
              () => gateway.size,
              () => engine.webhooks.stats(now()),
            ),
            { node: engine.node, now, log, intervalMs: options.dashboard?.statsIntervalMs },
          ),
          log,
          now,
        };
  // Sampled only while the dashboard is on: a service without it pays nothing.
  dashboard?.stats.start();
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (handleOpsRequest(req, res, ops)) return;
    if (handleDashboardRequest(req, res, dashboard)) return;
    void handleApiRequest(req, res, deps);
  };
  const server: Server = createServer(
    { keepAliveTimeout: 30_000, requireHostHeader: false, ...guardedServerOptions(admission.limits.headersTimeoutMs) },
    onRequest,
  );
  guardConnections(server, admission);
  server.on('upgrade', (req, socket, head) => {
    // Refused before the WebSocket is accepted: a page over a cap never costs a page.
    const refused = admission.admitPage(req, socket);
    if (refused === undefined) return gateway.handleUpgrade(req, socket, head);
    socket.on('error', () => socket.destroy());
    socket.end(rawAnswer(503, 'Service Unavailable', 'unavailable', refused, false));
  });
  // Without this listener Node would send 100 Continue for any body, even one it will refuse.
  server.on('checkContinue', (req, res) => {
    if (refuseLargeContinue(req, res)) return;
    res.writeContinue();
    onRequest(req, res);
  });
  // An Expect other than 100-continue would get Node's bare 417; take the request as any other.
  server.on('checkExpectation', onRequest);
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket) => {
    // Malformed HTTP never reaches a handler: answer in the same JSON shape when the socket still can.
    if (!socket.writable || socket.writableEnded) {
      socket.destroy();
      return;
    }
    const head = error.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    if (isRequestTimeout(error)) {
      socket.end(rawAnswer(408, 'Request Timeout', 'request_timeout', 'the request did not arrive in time', head));
      return;
    }
    const message =
      error.code === 'HPE_HEADER_OVERFLOW' ? 'the request headers are over 16 KB' : 'the request is not valid HTTP';
    socket.end(rawAnswer(400, 'Bad Request', 'bad_request', message, head));
  });
  // CONNECT is no method of this API; without a listener Node would drop the connection unanswered.
  server.on('connect', (_req, socket: Duplex) => {
    socket.end(rawAnswer(405, 'Method Not Allowed', 'bad_method', 'this service takes no CONNECT', false));
  });

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4000, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${urlHost}:${address.port}`;

  await webhooks.start();
  const pruneHistory = async () => {
    try {
      await engine.history.prune(now());
    } catch (error) {
      // A full disk fails deletes too: logged, tried again next time.
      log.error({ err: error }, 'pruning history failed');
    }
  };
  const pruner = setInterval(() => void pruneHistory(), HISTORY_PRUNE_MS);
  pruner.unref();

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      draining = true;
      // A load balancer polling /ready sees 503 and stops sending new pages here before they are closed.
      if (options.shutdownDelayMs) await new Promise((resolve) => setTimeout(resolve, options.shutdownDelayMs));
      clearInterval(pruner);
      dashboard?.stats.stop();
      // Pages first, told to reconnect (to another node, or to this one once it is back).
      stopGapListener?.();
      stopRepair?.();
      await gateway.close();
      // One last try of what waits; what the store still holds after it goes with this node's lease.
      await departures.flush();
      departures.close();
      await calls.close();
      await groups.close();
      await streams.close();
      await units.close();
      await signals.close();
      // Live consoles end here: an open stream would hold the drain below for its whole time.
      await consoleTap.close();
      users.close();
      nodes.close();
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await deps.ask.close();
      const drainMs = options.drainMs ?? 10_000;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise((resolve) => (timer = setTimeout(resolve, drainMs)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      await webhooks.close();
      await engine.close();
    })();
    return closing;
  };

  return {
    url,
    host: address.address,
    port: address.port,
    log,
    events: extra ?? webhooks,
    metrics,
    apps: engine.apps,
    pages: () => gateway.size,
    disconnectUser: (app, user, code) => gateway.disconnectUser(app, user, code),
    watchedByConsole: (app) => consoleTap.watching(app),
    close,
  };
}
