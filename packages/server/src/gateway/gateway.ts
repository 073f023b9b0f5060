import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  CLOSE,
  HEARTBEAT_MS,
  type HelloFrame,
  type IdentityClaims,
  MAX_FRAME_BYTES,
  PROTOCOL_VERSION,
  SOCKET_PATH,
  withReconnectHint,
} from '@realtime/protocol';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { acceptedSecrets } from '../apps/secret-rotation.js';
import type { MemberScale } from '../core/member-windows.js';
import { frameJson } from '../core/ws-frame.js';
import { StoreError } from '../engines/store-error.js';
import { refill } from '../engines/token-bucket.js';
import type { App } from '../engines/types.js';
import { issuedAt } from '../users/token-revocations.js';
import { revokedReason } from '../users/user-service.js';
import { Connection, DEFAULT_STALL_MS } from './connection.js';
import type { GatewayDeps } from './context.js';
import { FrameError, FrameRegistry, frame, frameSubject, type PageModule, type Parsed } from './frame-registry.js';
import { DEFAULT_RECONNECT_SPREAD, type ReconnectSpread, reconnectDelays } from './reconnect-spread.js';
import { TokenError, verifyIdentity } from './tokens.js';

export interface GatewayOptions {
  /** Bytes of frames a page may have waiting before it is closed as a slow consumer. */
  outboxBytes?: number;
  heartbeatMs?: number;
  /** A page silent this long is closed (4101). */
  silenceMs?: number;
  helloTimeoutMs?: number;
  /** Frames per second a page may send, and its burst. */
  framesPerSecond?: number;
  frameBurst?: number;
  /** A page replaying history that does not read its queue below half within this long is closed (4200). */
  replayStallMs?: number;
  /** How presence scales: the member threshold, page size and windows (core/member-windows.ts). */
  members?: Partial<MemberScale>;
  /**
   * Pages closed together with 4100 (stop, lost lease, Redis outage) are told to wait a random
   * delay over max(1 s, pages / rate), capped: defaults 500 reconnects per second, 30 s.
   */
  reconnect?: Partial<ReconnectSpread>;
  /** The random source of those delays; Math.random by default. */
  random?: () => number;
}

/**
 * A store failure a handler did not map itself (its app read, say, while Redis is away) is the
 * service's, not the frame's: `unavailable` (or `storage_full`) naming the frame's ref and what it
 * was about, so the page retries that frame instead of taking it as refused.
 */
function storeRefusal(error: unknown, parsedFrame: Parsed['frame']): unknown {
  if (!(error instanceof StoreError)) return error;
  const { ref, about } = frameSubject(parsedFrame);
  return new FrameError(error.code, error.message, ref, about);
}

const HELLO_SPEC = { required: { v: 'number' }, optional: { identity: 'string' } } as const;

const PING = frameJson({ t: 'ping' });
const PONG = frameJson({ t: 'pong' });

/**
 * The WebSocket side of the service: upgrades at /service/realtime/socket, the hello handshake,
 * heartbeats, and the close of every page on shutdown. Frames go to their handler through one
 * registry, and the features' modules (rooms, asks, calls, groups, streams) are given as a list.
 */
export class Gateway {
  readonly #deps: GatewayDeps;
  readonly #wss: WebSocketServer;
  readonly #connections = new Set<Connection>();
  readonly #greeting = new Set<Connection>();
  /** Open pages by id: page frames from other nodes are addressed to one. */
  readonly #byId = new Map<string, Connection>();
  /** Ids of every page from its upgrade until its clean-up ran: what the store's records may name. */
  readonly #held = new Set<string>();
  readonly #registry = new FrameRegistry();
  readonly #modules: PageModule[];
  /** The modules' frames taken at once, ahead of the budget and the queue (answers to asks). */
  readonly #atOnce: NonNullable<PageModule['atOnce']>[];
  readonly #options: Required<Omit<GatewayOptions, 'members' | 'reconnect'>> & { reconnect: ReconnectSpread };
  readonly #timers: NodeJS.Timeout[] = [];
  #pageCount = 0;

  constructor(deps: GatewayDeps, options: GatewayOptions = {}, modules: readonly PageModule[] = []) {
    this.#deps = deps;
    this.#modules = [...modules];
    this.#atOnce = this.#modules.flatMap((module) => (module.atOnce ? [module.atOnce] : []));
    // hello, ping and pong are the socket's own: handled before any module (see #onMessage).
    this.#registry.add({
      hello: frame<HelloFrame>(HELLO_SPEC, () => {}),
      ping: frame({ required: {} }, () => {}),
      pong: frame({ required: {} }, () => {}),
    });
    for (const module of this.#modules) this.#registry.add(module.frames);
    this.#options = {
      outboxBytes: options.outboxBytes ?? 4 * 1_048_576,
      heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
      silenceMs: options.silenceMs ?? 60_000,
      helloTimeoutMs: options.helloTimeoutMs ?? 10_000,
      framesPerSecond: options.framesPerSecond ?? 100,
      frameBurst: options.frameBurst ?? 200,
      replayStallMs: options.replayStallMs ?? DEFAULT_STALL_MS,
      reconnect: { ...DEFAULT_RECONNECT_SPREAD, ...options.reconnect },
      random: options.random ?? Math.random,
    };
    if (options.members) deps.hub.configureMembers(options.members);
    this.#wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      clientTracking: false,
    });
    // One sweep for every page instead of timers per page: memory per idle page stays small.
    const sweep = setInterval(() => this.#sweepGreeting(), Math.min(1000, this.#options.helloTimeoutMs));
    const beat = setInterval(() => this.#heartbeat(), this.#options.heartbeatMs);
    sweep.unref();
    beat.unref();
    this.#timers.push(sweep, beat);
  }

  get size(): number {
    return this.#connections.size;
  }

  /** The open page of this id on this node, if any. */
  page(id: string): Connection | undefined {
    return this.#byId.get(id);
  }

  /** Whether this node has the page: from its upgrade until its clean-up ran (open or closing). */
  holds(id: string): boolean {
    return this.#held.has(id);
  }

  /** Takes an HTTP upgrade; answers 404 for any other path. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    if ((q < 0 ? url : url.slice(0, q)) !== SOCKET_PATH) {
      const body = JSON.stringify({
        ok: false,
        error: 'not_found',
        message: 'WebSockets are at /service/realtime/socket',
      });
      socket.end(
        `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    const site = new URLSearchParams(q < 0 ? '' : url.slice(q + 1)).get('site') ?? '';
    // No error listener of ours: ws has one on the socket from here on (it destroys the socket).
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      let app: ReturnType<GatewayDeps['apps']['get']>;
      try {
        app = site === '' ? undefined : this.#deps.apps.get(site);
      } catch (error) {
        app = Promise.reject(error);
      }
      // An app at hand (cached, or a store in this process) opens the page at once.
      if (!(app instanceof Promise)) {
        this.#admit(ws, socket, app);
        return;
      }
      // Frames that come while the app is read (a round trip on a networked store) wait in the
      // socket: the page's hello is often in the same packet as the upgrade.
      ws.pause();
      app.then(
        (found) => {
          this.#admit(ws, socket, found);
          ws.resume();
        },
        (error: unknown) => {
          // The app could not be read (the store is down): the page tries again with its backoff.
          this.#deps.log.error({ err: error }, 'reading the app of a new page failed');
          ws.resume();
          ws.close(1013, 'the service could not read the app; reconnect');
        },
      );
    });
  }

  /** The page of an accepted WebSocket, once its app is read: an unknown site is closed. */
  #admit(ws: WebSocket, socket: Duplex, found: App | undefined): void {
    if (!found) {
      ws.close(CLOSE.unknownSite, 'unknown site');
      return;
    }
    const conn = new Connection(ws, socket as Socket, found, {
      id: `${this.#deps.node}.${(++this.#pageCount).toString(36)}`,
      outboxBytes: this.#options.outboxBytes,
      budget: this.#options.frameBurst,
      now: this.#deps.now(),
      traffic: this.#deps.traffic,
      stallMs: this.#options.replayStallMs,
    });
    this.#open(conn);
  }

  #open(conn: Connection): void {
    this.#connections.add(conn);
    this.#held.add(conn.id);
    this.#greeting.add(conn);
    conn.onSlow = () => {
      if (conn.state !== 'closed') this.#deps.traffic.slowConsumerCloses++;
      conn.close(CLOSE.slowConsumer, 'slow consumer');
    };
    conn.ws.on('message', (data, isBinary) => this.#onMessage(conn, data, isBinary));
    conn.ws.on('close', () => conn.queue(() => this.#onClose(conn)));
    conn.ws.on('error', (error) => this.#deps.log.debug({ err: error, page: conn.id }, 'socket error'));
  }

  #onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (conn.state === 'closed') return;
    const now = this.#deps.now();
    conn.lastSeen = now;
    if (!isBinary && this.#tookAtOnce(conn, data)) return;
    if (!this.#spend(conn, now)) return;
    if (isBinary) {
      if (conn.state === 'greeting') conn.close(CLOSE.badHello, 'the first frame must be hello');
      else this.#refuse(conn, new FrameError('bad_frame', 'frames are JSON text, not binary'));
      return;
    }
    let parsed: Parsed;
    try {
      parsed = this.#registry.parse(data.toString());
    } catch (error) {
      if (conn.state === 'greeting') conn.close(CLOSE.badHello, 'the first frame must be hello');
      else this.#refuse(conn, error);
      return;
    }
    const { frame: parsedFrame } = parsed;
    // Frames after hello wait in the page's queue while the identity is checked.
    if (!conn.greeted && parsedFrame.t !== 'hello') {
      conn.close(CLOSE.badHello, 'the first frame must be hello');
      return;
    }
    if (parsedFrame.t === 'hello') {
      conn.greeted = true;
      conn.queue(() => this.#run(conn, () => this.#hello(conn, parsedFrame as unknown as HelloFrame)));
      return;
    }
    if (parsedFrame.t === 'ping') {
      conn.deliver(PONG);
      return;
    }
    if (parsedFrame.t === 'pong') return;
    conn.queue(() => this.#run(conn, () => parsed.handler.handle(conn, parsedFrame), parsedFrame));
  }

  /** A frame a module takes at once (an answer to an ask): handled now, uncharged, not behind the queue. */
  #tookAtOnce(conn: Connection, data: RawData): boolean {
    if (this.#atOnce.length === 0) return false;
    let text: string | undefined;
    const read = (): string => {
      text ??= data.toString();
      return text;
    };
    for (const take of this.#atOnce) {
      const parsed = take(conn, read);
      if (parsed === undefined) continue;
      try {
        parsed.handler.handle(conn, parsed.frame);
      } catch (error) {
        this.#refuse(conn, error);
      }
      return true;
    }
    return false;
  }

  /** The page's frame budget: a token bucket. Far over it, the page is closed to back off. */
  #spend(conn: Connection, now: number): boolean {
    const { framesPerSecond, frameBurst } = this.#options;
    conn.budget = refill(conn.budget, conn.budgetAt, now, framesPerSecond, frameBurst);
    conn.budgetAt = now;
    conn.budget -= 1;
    if (conn.budget >= 0) return true;
    this.#deps.traffic.framesRateLimited++;
    if (conn.budget < -frameBurst) conn.close(CLOSE.tooFast, 'too many frames');
    else this.#refuse(conn, new FrameError('rate_limited', `more than ${framesPerSecond} frames per second`));
    return false;
  }

  /** Runs a frame's handler in the page's queue; what it throws becomes an error frame. */
  async #run(conn: Connection, handle: () => Promise<void> | void, parsedFrame?: Parsed['frame']): Promise<void> {
    if (conn.state === 'closed') return;
    try {
      await handle();
    } catch (thrown) {
      const error = parsedFrame === undefined ? thrown : storeRefusal(thrown, parsedFrame);
      this.#refuse(conn, error);
    }
  }

  async #hello(conn: Connection, frame: HelloFrame): Promise<void> {
    if (conn.state !== 'greeting') throw new FrameError('bad_frame', 'hello was sent already');
    if (frame.v !== PROTOCOL_VERSION) {
      conn.close(CLOSE.unsupportedVersion, `this service speaks version ${PROTOCOL_VERSION}`);
      return;
    }
    this.#greeting.delete(conn);
    let claims: Awaited<ReturnType<typeof verifyIdentity>> | undefined;
    if (frame.identity !== undefined) {
      try {
        const now = this.#deps.now();
        claims = await verifyIdentity(frame.identity, acceptedSecrets(conn.app, now), now);
      } catch (error) {
        const reason = error instanceof TokenError ? error.message : 'the identity is not valid';
        conn.close(CLOSE.badIdentity, reason.slice(0, 120));
        return;
      }
    }
    if (claims && !(await this.#identityHolds(conn, claims))) return;
    // The page may have gone while its identity was checked: then it never opened as its user.
    if ((conn.state as string) === 'closed') return;
    if (claims) {
      conn.user = claims.sub;
      conn.info = claims.info;
      conn.issued = issuedAt(claims);
    }
    if (conn.user !== null) {
      try {
        // Subscribed before the welcome: an event for the user after it reaches this page.
        await this.#deps.hub.addUserPage(conn.app.key, conn.user, conn);
        await this.#deps.users.opened(conn.app.key, conn.user, conn.id);
      } catch (error) {
        this.#deps.log.error({ err: error, page: conn.id }, 'opening a page failed');
        // 1013 Try Again Later (RFC 6455): the page reconnects with its backoff.
        conn.close(1013, 'the service could not open the page; reconnect');
        return;
      }
    }
    // A revocation told between the check above and the user's subscription found no page to close:
    // checked again (from the cache, at once) now that the page is where a revocation looks.
    if (claims && !(await this.#identityHolds(conn, claims))) return;
    if ((conn.state as string) === 'closed') return;
    conn.state = 'open';
    this.#byId.set(conn.id, conn);
    conn.send({ t: 'welcome', v: PROTOCOL_VERSION, user: conn.user, heartbeat: this.#options.heartbeatMs });
    for (const module of this.#modules) {
      try {
        // Awaited only when it waits: most modules have nothing to do when a page opens.
        const opening = module.opened?.(conn);
        if (opening) await opening;
      } catch (error) {
        this.#deps.log.error({ err: error, page: conn.id }, 'opening a page in a module failed');
      }
    }
  }

  /**
   * Whether the page's identity is not revoked; a revoked one closes the page with 4005, and a
   * revocation store that cannot be read with 1013 (the page tries again with its backoff).
   */
  async #identityHolds(conn: Connection, claims: IdentityClaims): Promise<boolean> {
    const revocations = this.#deps.revocations;
    if (!revocations) return true;
    let revoked: boolean;
    try {
      const checked = revocations.revoked(conn.app.key, claims.sub, claims);
      revoked = checked === true || (checked !== false && (await checked));
    } catch (error) {
      this.#deps.log.error({ err: error, page: conn.id }, 'reading the revocations of a page failed');
      conn.close(1013, 'the service could not check the identity; reconnect');
      return false;
    }
    if (revoked) conn.close(CLOSE.tokenRevoked, 'the identity token was issued before a revocation of its tokens');
    return !revoked;
  }

  /** An error frame for a refused frame; anything unexpected is logged and reported without detail. */
  #refuse(conn: Connection, error: unknown): void {
    if (error instanceof FrameError) {
      const answer: Record<string, unknown> = { t: 'error', code: error.code, message: error.message };
      if (error.ref !== undefined) answer.ref = error.ref;
      if (error.room !== undefined) answer.room = error.room;
      if (error.call !== undefined) answer.call = error.call;
      if (error.stream !== undefined) answer.stream = error.stream;
      if (error.group !== undefined) answer.group = error.group;
      conn.send(answer);
      return;
    }
    this.#deps.log.error({ err: error, page: conn.id }, 'frame handler failed');
    conn.send({ t: 'error', code: 'bad_frame', message: 'the service could not handle this frame' });
  }

  /** A page counts (pages(), metrics) until its clean-up ran: presence and rooms on every node know it left. */
  async #onClose(conn: Connection): Promise<void> {
    conn.state = 'closed';
    this.#greeting.delete(conn);
    this.#byId.delete(conn.id);
    for (const module of this.#modules) {
      try {
        // Awaited only when it waits: what a module does at once (asks declined) happens at once.
        const closing = module.closed?.(conn);
        if (closing) await closing;
      } catch (error) {
        this.#deps.log.error({ err: error, page: conn.id }, 'closing a page in a module failed');
      }
    }
    // What the store holds of the page (rooms, presence) is let go whatever fails in another module.
    let unwritten: unknown;
    for (const module of this.#modules) {
      if (!module.released) continue;
      try {
        await module.released(conn);
      } catch (error) {
        unwritten ??= error;
      }
    }
    if (conn.user !== null) {
      try {
        await this.#deps.hub.removeUserPage(conn.app.key, conn.user, conn);
      } catch (error) {
        unwritten ??= error;
      }
      try {
        await this.#deps.users.closed(conn.app.key, conn.user, conn.id);
      } catch (error) {
        unwritten ??= error;
      }
    }
    if (unwritten !== undefined) {
      // What the store still holds of the page is closed (and reported) once the store answers.
      this.#deps.log.warn({ err: unwritten, page: conn.id }, 'cleaning up a closed page failed: tried again');
      this.#deps.departures.closeLater(conn.id);
    }
    this.#held.delete(conn.id);
    this.#connections.delete(conn);
  }

  #sweepGreeting(): void {
    const deadline = this.#deps.now() - this.#options.helloTimeoutMs;
    for (const conn of this.#greeting) {
      if (conn.openedAt <= deadline) {
        this.#greeting.delete(conn);
        conn.close(CLOSE.helloTimeout, 'no hello in time');
      }
    }
  }

  #heartbeat(): void {
    const silentSince = this.#deps.now() - this.#options.silenceMs;
    for (const conn of this.#connections) {
      if (conn.state !== 'open') continue;
      if (conn.lastSeen < silentSince) conn.close(CLOSE.heartbeatTimeout, 'no frame from the page for too long');
      else conn.deliver(PING);
    }
  }

  /** Closes the open pages of a user (they reconnect for 41xx codes); returns how many. */
  disconnectUser(
    app: string,
    user: string,
    code: number = CLOSE.shutdown,
    reason = 'disconnected by the service',
  ): number {
    const pages = this.#deps.hub.pagesOf(app, user);
    for (const conn of pages) conn.close(code, reason);
    return pages.length;
  }

  /**
   * Closes with 4005 the open pages of the app holding an identity or room token (of `user`, or of
   * anyone) issued before `beforeMs`, spread like reconnectAll: they fetch fresh tokens and come
   * back, not all in the same second. Answers how many.
   */
  closeRevoked(app: string, user: string | undefined, beforeMs: number): number {
    const candidates = user === undefined ? this.#connections : this.#deps.hub.pagesOf(app, user);
    const revoked: Connection[] = [];
    for (const conn of candidates) {
      if (conn.state === 'closed' || conn.app.key !== app) continue;
      if (holdsRevoked(conn, user, beforeMs)) revoked.push(conn);
    }
    const delay = reconnectDelays(revoked.length, this.#options.reconnect, this.#options.random);
    for (const conn of revoked) conn.close(CLOSE.tokenRevoked, revokedReason(delay()));
    return revoked.length;
  }

  /** Closes every open page with 4100: they reconnect (to any node) and resume from their last ids. */
  reconnectAll(): void {
    this.#closeAllSpread('the service lost events for this page; resume');
  }

  /**
   * Closes with 4100 the open pages in these rooms or of these users (topics), spread like
   * reconnectAll: one shard's gap sends back only the pages it cut off. Answers how many.
   */
  reconnectTopics(topics: readonly string[]): number {
    const pages = this.#deps.hub.pagesOn(topics);
    const open = [...this.#connections].filter((conn) => conn.state !== 'closed' && pages.has(conn));
    this.#closeSpread(open, 'the service lost events for this page; resume');
    return open.length;
  }

  /**
   * This node's lease lapsed and its pages were taken out of presence by another node: every page
   * is closed with 4100, and comes back (here or elsewhere) to be counted again. Their clean-ups
   * end what is left (calls, seats), and report nothing twice: the sweep reported the departures.
   */
  lapsed(): void {
    this.#closeAllSpread('this node lost its place in the cluster; reconnect');
  }

  /**
   * Closes every open page with 4100, each told (in its close reason) to wait its own random delay
   * over a window sized by how many close now: they do not all come back in the same second.
   */
  #closeAllSpread(reason: string): void {
    this.#closeSpread(
      [...this.#connections].filter((conn) => conn.state !== 'closed'),
      reason,
    );
  }

  #closeSpread(open: readonly Connection[], reason: string): void {
    const delay = reconnectDelays(open.length, this.#options.reconnect, this.#options.random);
    for (const conn of open) conn.close(CLOSE.shutdown, withReconnectHint(reason, delay()));
  }

  /** Closes every page with 4100 (reconnect) and waits until their clean-up ran. */
  async close(): Promise<void> {
    for (const timer of this.#timers) clearInterval(timer);
    const open = [...this.#connections].filter((conn) => conn.ws.readyState !== conn.ws.CLOSED);
    const delay = reconnectDelays(open.length, this.#options.reconnect, this.#options.random);
    const closing = [...this.#connections].map(
      (conn) =>
        new Promise<void>((resolve) => {
          // A page closed already has its clean-up queued: waiting behind it is enough.
          if (conn.ws.readyState === conn.ws.CLOSED) return conn.queue(resolve);
          conn.ws.once('close', () => conn.queue(resolve));
          conn.close(CLOSE.shutdown, withReconnectHint('the service is stopping', delay()));
          // A peer that never answers the close handshake is cut off.
          setTimeout(() => conn.ws.terminate(), 2000).unref();
        }),
    );
    await Promise.all(closing);
    this.#wss.close();
  }
}

/** Whether the page's identity, or one of its room tokens, is of `user` (any user: undefined) and issued before. */
function holdsRevoked(conn: Connection, user: string | undefined, beforeMs: number): boolean {
  if (conn.issued !== undefined && conn.issued < beforeMs && (user === undefined || conn.user === user)) return true;
  for (const membership of conn.rooms.values()) {
    const { claims } = membership;
    if ((user === undefined || claims.sub === user) && issuedAt(claims) < beforeMs) return true;
  }
  return false;
}
