import {
  CLOSE,
  type ClientFrame,
  closeAdvice,
  HEARTBEAT_MS,
  PROTOCOL_VERSION,
  reconnectHint,
  type ServerFrame,
  type WelcomeFrame,
} from '@realtime/protocol';
import { RealtimeSocketError } from '../errors.js';
import { Backoff, type BackoffKind, type BackoffPolicy } from './backoff.js';
import type { Clock } from './clock.js';
import { Watchdog } from './heartbeat.js';
import { type ConnectionInput, type ConnectionState, transition } from './states.js';
import { Transport, type WebSocketConstructor } from './transport.js';

/**
 * Why a socket ended: its close code and reason, or the SDK's own for local causes.
 * `closeAdvice(code)` says whether the SDK stops, reconnects or backs off after it.
 */
export interface Disconnect {
  /** The WebSocket close code; 1006 for local causes (silence, timeout, identity failure), 1000 for `close()`. */
  code: number;
  reason: string;
}

/**
 * A change of {@link ConnectionState}, as given to `$state` listeners.
 *
 * @example
 * client.on('$state', ({ state, code, retryIn }) => {
 *   if (state === 'reconnecting') showBanner(`reconnecting in ${retryIn} ms (close ${code})`);
 *   if (state === 'closed' && code === CLOSE.unknownSite) reportMisconfiguration();
 * });
 */
export interface StateChange {
  state: ConnectionState;
  previous: ConnectionState;
  /** The close code that caused it (absent when connecting succeeded). */
  code?: number;
  /** The close reason, or what the SDK noticed. */
  reason?: string;
  /** When reconnecting: the delay before the next attempt (ms). */
  retryIn?: number;
}

/**
 * What gives the identity token for each attempt; undefined (or '') connects anonymously.
 *
 * @example
 * const identity: IdentitySource = () => fetch('/rt/identity').then((r) => (r.ok ? r.text() : null));
 */
export type IdentitySource = () => string | null | undefined | Promise<string | null | undefined>;

export interface ConnectionOptions {
  /** The socket URL, `ws(s)://.../service/realtime/socket?site=...`. */
  url: string;
  WebSocket: WebSocketConstructor;
  identity: IdentitySource | undefined;
  /** True when `identity` can give a fresh token, so a 4002 close is worth a retry. */
  identityRefreshes: boolean;
  clock: Clock;
  random: () => number;
  backoff: BackoffPolicy;
  /** Time allowed from the start of an attempt to `welcome` (ms). */
  connectTimeoutMs: number;
}

/** What the connection tells its owner. Called synchronously, in the order things happen. */
export interface ConnectionHooks {
  /** Welcomed; called before the `connected` state change, so the owner can re-join its rooms. */
  welcome(frame: WelcomeFrame): void;
  /** Any frame after `welcome`, except `ping` and `pong`. */
  frame(frame: ServerFrame): void;
  /** The socket is gone; `final` when no reconnect follows. Called before the state change. */
  lost(cause: Disconnect, final: boolean): void;
  state(change: StateChange): void;
  error(error: RealtimeSocketError): void;
}

const LOCAL_LOSS = 1006;
const PAGE_CLOSE = 1000;

/**
 * One logical connection to the service over a succession of sockets: opens, says hello, watches
 * for silence, and on every loss decides (from the close code) to stop or to reconnect after a
 * backoff delay. Every end of a socket goes through {@link Connection.#drop}.
 */
export class Connection {
  readonly #options: ConnectionOptions;
  readonly #hooks: ConnectionHooks;
  readonly #backoff: Backoff;
  readonly #watchdog: Watchdog;
  #state: ConnectionState = 'connecting';
  /** Rises at every attempt and every drop: callbacks of an older attempt see a different number and do nothing. */
  #attempt = 0;
  #transport: Transport | undefined;
  #welcomed = false;
  #retryTimer: unknown;

  constructor(options: ConnectionOptions, hooks: ConnectionHooks) {
    this.#options = options;
    this.#hooks = hooks;
    this.#backoff = new Backoff(options.backoff, options.random);
    this.#watchdog = new Watchdog(options.clock, (silent) =>
      this.#drop({
        code: LOCAL_LOSS,
        reason: this.#welcomed ? `no frame from the service for ${silent} ms` : 'no welcome in time',
      }),
    );
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** True between `welcome` and the loss of that socket: frames written now are taken. */
  get ready(): boolean {
    return this.#welcomed;
  }

  /**
   * Opens the first socket, in a microtask: listeners added right after `connect()` returns
   * still see everything, even an identity function that fails at once.
   */
  start(): void {
    queueMicrotask(() => {
      if (this.#attempt === 0 && this.#state !== 'closed') void this.#open();
    });
  }

  /** Writes a frame if welcomed; false otherwise (nothing is written). */
  send(frame: ClientFrame): boolean {
    return this.sendText(JSON.stringify(frame));
  }

  /** Writes frame text if welcomed; false otherwise. */
  sendText(text: string): boolean {
    return this.#welcomed && this.#transport?.send(text) === true;
  }

  /** Closes for good (close code 1000). */
  close(): void {
    this.#drop({ code: PAGE_CLOSE, reason: 'closed by the page' });
  }

  async #open(): Promise<void> {
    const attempt = ++this.#attempt;
    // The time limit covers the identity fetch too: a hung fetch must not hang the connection.
    this.#watchdog.arm(this.#options.connectTimeoutMs);
    let identity: string | null | undefined;
    try {
      identity = await this.#options.identity?.();
    } catch (error) {
      if (attempt !== this.#attempt) return;
      this.#hooks.error(new RealtimeSocketError('identity_failed', 'the identity function failed', { cause: error }));
      this.#drop({ code: LOCAL_LOSS, reason: 'the identity function failed' });
      return;
    }
    if (attempt !== this.#attempt) return;
    const hello: ClientFrame =
      typeof identity === 'string' && identity !== ''
        ? { t: 'hello', v: PROTOCOL_VERSION, identity }
        : { t: 'hello', v: PROTOCOL_VERSION };
    const transport = new Transport(this.#options.WebSocket, this.#options.url, {
      open: () => transport.send(JSON.stringify(hello)),
      frame: (frame) => {
        if (attempt === this.#attempt) this.#receive(frame);
      },
      close: (code, reason) => {
        if (attempt === this.#attempt) this.#drop({ code, reason });
      },
    });
    this.#transport = transport;
  }

  #receive(frame: ServerFrame): void {
    this.#watchdog.feed();
    if (frame.t === 'ping') {
      this.#transport?.send('{"t":"pong"}');
      return;
    }
    if (frame.t === 'pong') return;
    if (this.#welcomed) {
      this.#hooks.frame(frame);
      return;
    }
    // Before welcome, the service sends nothing else; anything else is ignored.
    if (frame.t !== 'welcome') return;
    if (frame.v !== PROTOCOL_VERSION) {
      this.#drop({ code: 4000, reason: `the service speaks protocol version ${String(frame.v)}` });
      return;
    }
    this.#welcomed = true;
    this.#backoff.reset();
    const heartbeat = typeof frame.heartbeat === 'number' && frame.heartbeat > 0 ? frame.heartbeat : HEARTBEAT_MS;
    this.#watchdog.arm(2 * heartbeat);
    this.#hooks.welcome(frame);
    this.#move('welcome', {});
  }

  /** The one disconnect funnel: every socket end, local timeout and `close()` comes through here. */
  #drop(cause: Disconnect): void {
    if (this.#state === 'closed') return;
    this.#attempt++;
    this.#watchdog.stop();
    if (this.#retryTimer !== undefined) this.#options.clock.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const transport = this.#transport;
    this.#transport = undefined;
    this.#welcomed = false;
    transport?.close(PAGE_CLOSE, cause.reason);

    const kind = this.#advice(cause.code);
    this.#hooks.lost(cause, kind === 'stop');
    if (kind === 'stop') {
      this.#move('stop', { code: cause.code, reason: cause.reason });
      return;
    }
    const delay = this.#delay(kind, cause.reason);
    this.#move('lost', { code: cause.code, reason: cause.reason, retryIn: delay });
    if (this.#state !== 'reconnecting') return; // a listener closed the client
    this.#retryTimer = this.#options.clock.setTimeout(() => {
      this.#retryTimer = undefined;
      void this.#open();
    }, delay);
  }

  /**
   * The service's hinted delay (`reconnect in <ms> ms` in the close reason) when it gave one: it
   * spreads the pages it closed together. It stands for one backoff step, so a failed attempt
   * after it goes on with the next step of the page's own backoff.
   */
  #delay(kind: BackoffKind, reason: string): number {
    const hint = reconnectHint(reason);
    if (hint === undefined) return this.#backoff.next(kind);
    this.#backoff.skip();
    return hint;
  }

  #advice(code: number): 'stop' | BackoffKind {
    // 4002: the identity is not valid; a function may give a fresh one, a fixed string never will.
    if (code === CLOSE.badIdentity) return this.#options.identityRefreshes ? 'reconnect' : 'stop';
    // 4005: tokens were revoked. Fresh ones come from an identity function, and room token functions
    // are called again at each re-join; a fixed identity string would only be refused again.
    if (code === CLOSE.tokenRevoked) {
      return this.#options.identityRefreshes || this.#options.identity === undefined ? 'reconnect' : 'stop';
    }
    // 4004 (the app's server disconnected the user) is in the stop range: closed, no reconnect.
    return closeAdvice(code);
  }

  #move(input: ConnectionInput, detail: Omit<StateChange, 'state' | 'previous'>): void {
    const next = transition(this.#state, input);
    if (next === undefined) return;
    const previous = this.#state;
    this.#state = next;
    if (next !== previous) this.#hooks.state({ state: next, previous, ...detail });
  }
}
