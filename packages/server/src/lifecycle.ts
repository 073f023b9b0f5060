import type { IncomingMessage, ServerResponse } from 'node:http';
import { CachedAppStore } from './apps/cached-app-store.js';
import { RateLimiter } from './apps/rate-limit.js';
import { askModule } from './asks/ask-module.js';
import { AskService } from './asks/ask-service.js';
import { callModule } from './calls/call-module.js';
import { CallService } from './calls/call-service.js';
import type { CallOptions } from './calls/options.js';
import { parsePasswordHash } from './config/password-hash.js';
import type { ServerLimits } from './config/server-limits.js';
import { type DepartureOptions, Departures } from './core/departures.js';
import { Emitter } from './core/emit.js';
import type { EventSink } from './core/events.js';
import { wsFrameEncoder } from './core/frame-encoder.js';
import { Hub } from './core/hub.js';
import { NodeChannel } from './core/node-channel.js';
import { NodeRegistry } from './core/node-registry.js';
import { PageSignals } from './core/page-signals.js';
import { UserPresence } from './core/user-presence.js';
import { ConsoleTap } from './dashboard/console-tap.js';
import { type DashboardDeps, handleDashboardRequest } from './dashboard/dashboard-http.js';
import { newCheckQueue } from './dashboard/session-api.js';
import { DashboardSessions } from './dashboard/sessions.js';
import { metricSources, StatsSampler } from './dashboard/stats-sampler.js';
import type { EmbeddedStores } from './engines/embedded.js';
import { MemoryLimitStore } from './engines/memory/limits.js';
import { type EngineChoice, openEngine } from './engines/open-engine.js';
import type { App, AppStore, Engine } from './engines/types.js';
import type { Connection } from './gateway/connection.js';
import type { GatewayDeps } from './gateway/context.js';
import { Gateway, type GatewayOptions } from './gateway/gateway.js';
import { groupModule } from './groups/group-module.js';
import { GroupService } from './groups/group-service.js';
import { Admission } from './http/admission.js';
import { BrowserBundle, handleBrowserBundle } from './http/browser-bundle.js';
import { TrustedProxies } from './http/client-address.js';
import type { ApiDeps } from './http/context.js';
import { createHttpServer } from './http/http-server.js';
import { handleOpsRequest } from './http/ops.js';
import { handleApiRequest } from './http/pipeline.js';
import { type Component, startAll } from './lifecycle/component.js';
import { dashboardSampler } from './lifecycle/dashboard-sampler.js';
import { departuresComponent } from './lifecycle/departures.js';
import { configuredApps, dataLossRepair, engineComponent } from './lifecycle/engine.js';
import { GatewayComponent, gapListener } from './lifecycle/gateway.js';
import { historyPruner } from './lifecycle/history-pruner.js';
import { HttpListener } from './lifecycle/http-listener.js';
import { mediaUnitsComponent } from './lifecycle/media-units.js';
import { Readiness } from './lifecycle/readiness.js';
import { serviceComponent } from './lifecycle/service.js';
import { webhookDelivery, webhooksComponent, withExtraSink } from './lifecycle/webhooks.js';
import { createLogger, type Logger, type LogLevel } from './log.js';
import { countedBroker, countedDeliverer, countedIdempotency } from './metrics/instrument.js';
import { Metrics } from './metrics/metrics.js';
import { roomModule } from './rooms/room-module.js';
import type { StreamOptions } from './streams/options.js';
import { STREAM_CONNECT_TIMEOUT_MS, unitLimits, unitMedia } from './streams/options.js';
import { streamModule } from './streams/stream-module.js';
import { StreamService } from './streams/stream-service.js';
import { iceConfig } from './units/ice-settings.js';
import { MediaApps } from './units/media-apps.js';
import { UnitHost } from './units/unit-host.js';
import { TokenRevocations } from './users/token-revocations.js';
import { UserService } from './users/user-service.js';
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

/**
 * Starts the service: the engine, then its components in order (see `wire`); `close()` stops them in
 * reverse. A start that fails stops what had started, and rejects with the error that stopped it.
 */
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
  let wired: Wired;
  try {
    wired = wire(engine, options, { log, now, dashboardHash });
  } catch (error) {
    // Nothing but the engine runs yet: what `wire` made starts with its component.
    await engine.close().catch((closing: unknown) => log.error({ err: closing }, 'closing the engine failed'));
    throw error;
  }
  const started = await startAll(wired.components, (component, error) =>
    log.error({ err: error }, `stopping the ${component} failed`),
  );
  const address = wired.listener.address;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    ...wired.server,
    url: `http://${urlHost}:${address.port}`,
    host: address.address,
    port: address.port,
    log,
    close: () => started.stop(),
  };
}

interface Wired {
  /** In start order; stopped in reverse, which is the order of a graceful stop. */
  components: Component[];
  listener: HttpListener;
  server: Pick<RunningServer, 'events' | 'metrics' | 'apps' | 'pages' | 'disconnectUser' | 'watchedByConsole'>;
}

/** Makes the parts of the server on the opened engine; none runs until its component starts. */
function wire(
  engine: Engine,
  options: ServerOptions,
  {
    log,
    now,
    dashboardHash,
  }: { log: Logger; now: () => number; dashboardHash: ReturnType<typeof parsePasswordHash> | undefined },
): Wired {
  const gateway = new GatewayComponent(() => new Gateway(gatewayDeps, options.gateway, modules()));
  const metrics = new Metrics({
    pages: () => gateway.current?.size ?? 0,
    rooms: () => hub.roomCount,
    webhooks: () => engine.webhooks.stats(now()),
  });
  const broker = countedBroker(engine.broker, metrics);
  const onCluster = options.engine?.kind === 'redis' && options.engine.cluster !== undefined;
  const apps = new CachedAppStore(engine.apps, { now, ...(onCluster ? { staleMs: 60_000 } : {}) });
  // What other nodes tell this one (answers to asks, page frames, console entries and watches), each
  // to the feature that registered for it: one subscription to this node's topic, one to every node's.
  const channel = new NodeChannel({ node: engine.node, broker: engine.broker, log });
  // The live console's tap: it listens on the core's diagnostics channels while a console watches, and
  // sends on the engine's broker itself, so console traffic is not counted as the apps'.
  const consoleTap = new ConsoleTap({ node: engine.node, broker: engine.broker, channel, log, now });
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
  });
  const events = withExtraSink(webhooks, options.events);
  // Closes and webhook events the store could not take, tried until it does.
  const departures = new Departures({
    node: engine.node,
    presence: engine.presence,
    broker,
    events,
    log,
    now,
    holds: (page) => gateway.current?.holds(page) ?? false,
    ...(options.departures === undefined ? {} : { options: options.departures }),
  });
  const users = new UserPresence({
    node: engine.node,
    presence: engine.presence,
    events: departures,
    log,
    now,
    ...(options.offlineDelayMs === undefined ? {} : { offlineDelayMs: options.offlineDelayMs }),
  });
  // This node's one lease; presence, calls, groups and streams each register what a dead node's pages leave.
  const nodes = new NodeRegistry({
    node: engine.node,
    nodes: engine.nodes,
    log,
    now,
    ...(options.nodeLeaseMs === undefined ? {} : { leaseMs: options.nodeLeaseMs }),
    lapsed: () => gateway.current?.lapsed(),
  });
  nodes.onLapse('presence', (claim) => departures.sweepNode(claim));
  const ask = new AskService({
    node: engine.node,
    broker,
    channel,
    presence: engine.presence,
    limits: engine.limits,
    log,
    now,
    ...(options.limits?.maxAsksPerUser === undefined ? {} : { maxAsksPerUser: options.limits.maxAsksPerUser }),
  });
  // Questions of asks go to the user's open pages here; their answers go back through the AskService.
  const hub = new Hub<Connection>(broker, wsFrameEncoder, (question, pages) =>
    ask.deliver(
      question,
      pages.filter((page) => page.state === 'open'),
    ),
  );
  // Frames of calls, groups and streams to pages on any node.
  const signals = new PageSignals({
    node: engine.node,
    broker,
    channel,
    log,
    now,
    page: (id) => gateway.current?.page(id),
  });
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
  // Revocations of tokens, checked at every hello and join from this node's cache.
  const revocations = new TokenRevocations({ store: engine.revocations, log, now });
  const userService = new UserService({
    node: engine.node,
    // The engine's own broker: closes and revocations are no emits of the app's, and not counted as such.
    broker: engine.broker,
    channel,
    store: engine.revocations,
    revocations,
    closeRevoked: (app, user, before) => gateway.current?.closeRevoked(app, user, before) ?? 0,
    log,
    now,
  });
  // One publish path: API emits and page sends go through the same emitter.
  const emitter = new Emitter({ node: engine.node, broker, now, events });
  const gatewayDeps: GatewayDeps = {
    node: engine.node,
    apps,
    hub,
    broker,
    history: engine.history,
    presence: engine.presence,
    emitter,
    users,
    departures,
    log,
    now,
    traffic: metrics.traffic,
    revocations,
  };
  const modules = () => [
    roomModule(gatewayDeps),
    askModule(ask),
    callModule(gatewayDeps, calls),
    groupModule(gatewayDeps, groups),
    streamModule(gatewayDeps, streams),
  ];

  const deps: ApiDeps = {
    apps,
    emitter,
    ask,
    webhooks,
    presence: engine.presence,
    history: engine.history,
    limiter: new RateLimiter(engine.limits, onCluster ? { local: new MemoryLimitStore(), shards: 8 } : {}),
    answered: (route, status, startedMs, overAppRate) => metrics.answered(route, status, startedMs, overAppRate),
    log,
    now,
    users: userService,
    idempotency: countedIdempotency(engine.idempotency, metrics),
  };

  const readiness = new Readiness(options.shutdownDelayMs);
  const ops = {
    metrics,
    metricsToken: options.metricsToken,
    draining: () => readiness.draining,
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
              () => gateway.current?.size ?? 0,
              () => engine.webhooks.stats(now()),
            ),
            { node: engine.node, now, log, intervalMs: options.dashboard?.statsIntervalMs },
          ),
          log,
          now,
        };
  const browserBundle = new BrowserBundle();
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (handleOpsRequest(req, res, ops)) return;
    if (handleBrowserBundle(req, res, browserBundle)) return;
    if (handleDashboardRequest(req, res, dashboard)) return;
    void handleApiRequest(req, res, deps);
  };
  const server = createHttpServer({
    admission,
    onRequest,
    upgrade: (req, socket, head) => {
      // The port opens after the gateway starts: it is there for every upgrade.
      if (gateway.current) gateway.current.handleUpgrade(req, socket, head);
      else socket.destroy();
    },
  });
  const listener = new HttpListener(server, {
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 4000,
    drainMs: options.drainMs ?? 10_000,
  });

  // Started in this order; stopped in reverse, which is the order of a graceful stop: /ready says 503
  // first, then pages close, the services, the lease, the port, asks, the node channel, the drain,
  // webhooks, the engine.
  // The port is three components: it opens last of all, but stops taking connections after the lease.
  const components: Component[] = [
    engineComponent(engine),
    configuredApps(engine, options.apps ?? []),
    // Registered as soon as the apps are stored, so a loss at any moment after is repaired.
    dataLossRepair(engine, options.apps ?? [], log),
    webhooksComponent(webhooks),
    listener.drain,
    serviceComponent('node channel', channel),
    serviceComponent('asks', ask),
    serviceComponent('users', userService),
    listener.close,
    serviceComponent('node lease', nodes),
    serviceComponent('user presence', users),
    serviceComponent('console tap', consoleTap),
    mediaUnitsComponent(units),
    serviceComponent('streams', streams),
    serviceComponent('groups', groups),
    serviceComponent('calls', calls),
    departuresComponent(departures),
    gateway,
    gapListener(broker, log, {
      all: () => gateway.current?.reconnectAll(),
      topics: (topics) => gateway.current?.reconnectTopics(topics) ?? 0,
    }),
    dashboardSampler(dashboard?.stats),
    listener.listen,
    webhookDelivery(webhooks),
    historyPruner(engine.history, log, now),
    readiness,
  ];
  return {
    components,
    listener,
    server: {
      events: options.events ?? webhooks,
      metrics,
      apps: engine.apps,
      pages: () => gateway.current?.size ?? 0,
      disconnectUser: (app, user, code) => gateway.current?.disconnectUser(app, user, code) ?? 0,
      watchedByConsole: (app) => consoleTap.watching(app),
    },
  };
}
