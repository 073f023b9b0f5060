import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionLimits } from '../config/server-limits.js';
import type { Logger } from '../log.js';
import { clientAddress, TrustedProxies } from './client-address.js';

export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = {
  maxPages: 100_000,
  maxPagesPerAddress: 1000,
  maxPendingHandshakes: 10_000,
  headersTimeoutMs: 10_000,
  trustProxy: [],
};

const UNTRUSTED_HINT =
  ' (it sends X-Forwarded-For, which is ignored: if it is your proxy, add it to limits.trustProxy)';
/** Peer addresses whose cap key is kept; past it the map starts over. */
const MAX_PEER_KEYS = 10_000;
/** How often each refusal may be logged: a flood must not flood the log too. */
const WARN_EVERY_MS = 10_000;

/**
 * Admission of connections: page slots (total and per address), taken at upgrade and given back
 * when the socket closes; and the connections that wait for a request, capped by dropping the
 * longest-waiting one. Dropping the oldest rather than the newest keeps the door open under a
 * flood of silent sockets: a real client sends its request within a round trip of connecting, so
 * it is never the oldest, while refusing newcomers would let a full set of idle sockets lock
 * every client out until they time out.
 */
export class Admission {
  readonly #limits: ConnectionLimits;
  readonly #trusted: TrustedProxies;
  readonly #log: Logger;
  #pages = 0;
  readonly #byAddress = new Map<string, number>();
  /** In the order they started waiting: the first is the one to drop. */
  readonly #waiting = new Set<Socket>();
  /** Requests in flight per socket (pipelining may have several). */
  readonly #inFlight = new WeakMap<Socket, number>();
  readonly #warnedAt = new Map<string, number>();
  readonly #peerKeys = new Map<string, string>();

  constructor(limits: Partial<ConnectionLimits> | undefined, log: Logger) {
    this.#limits = { ...DEFAULT_CONNECTION_LIMITS, ...limits };
    this.#trusted = new TrustedProxies(this.#limits.trustProxy);
    this.#log = log;
  }

  get limits(): Readonly<ConnectionLimits> {
    return this.#limits;
  }

  /** Connections now waiting for a request. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** A new TCP connection: it waits until its first request or upgrade. */
  connected(socket: Socket): void {
    socket.once('close', () => this.#waiting.delete(socket));
    this.#wait(socket);
  }

  /** A request (or upgrade) arrived on the socket. */
  requestStarted(socket: Socket): void {
    this.#inFlight.set(socket, (this.#inFlight.get(socket) ?? 0) + 1);
    this.#waiting.delete(socket);
  }

  /**
   * An upgrade (or CONNECT) took the socket: it waits no more, and no response will end it, so it
   * needs no count of requests in flight (a WeakMap entry per page costs a storm dearly).
   */
  handedOver(socket: Socket): void {
    this.#waiting.delete(socket);
  }

  /** A response was sent (or given up): with none left in flight, a kept-alive socket waits again. */
  requestEnded(socket: Socket): void {
    const left = (this.#inFlight.get(socket) ?? 1) - 1;
    this.#inFlight.set(socket, left);
    // A socket the server is closing (Connection: close) takes no further request.
    if (left === 0 && !socket.destroyed && !socket.writableEnded) this.#wait(socket);
  }

  #wait(socket: Socket): void {
    if (this.#waiting.size >= this.#limits.maxPendingHandshakes) {
      const oldest = this.#waiting.values().next().value;
      if (oldest) {
        this.#waiting.delete(oldest);
        oldest.destroy();
        this.#warn(
          'pending',
          `over ${this.#limits.maxPendingHandshakes} connections wait for a request: dropping the oldest`,
        );
      }
    }
    this.#waiting.add(socket);
  }

  /**
   * Takes a page slot for an upgrade, given back when the socket closes; or the reason it is refused.
   * A page counts from its upgrade, before its hello: the hello timeout bounds how long it may wait.
   */
  admitPage(req: IncomingMessage, socket: Duplex): string | undefined {
    if (this.#pages >= this.#limits.maxPages) {
      this.#warn('pages', `${this.#limits.maxPages} pages are open: refusing new ones`);
      return 'the service has too many pages open';
    }
    const forwarded = req.headers['x-forwarded-for'];
    const peer = req.socket.remoteAddress;
    const key = forwarded === undefined ? this.#peerKey(peer) : clientAddress(peer, forwarded, this.#trusted);
    const held = this.#byAddress.get(key) ?? 0;
    if (held >= this.#limits.maxPagesPerAddress) {
      // The usual cause of a whole service held to one address's cap: a proxy missing from trustProxy.
      const hint = forwarded !== undefined && !this.#trusted.hasText(req.socket.remoteAddress) ? UNTRUSTED_HINT : '';
      this.#warn('address', `${key} has ${this.#limits.maxPagesPerAddress} pages open: refusing more from it${hint}`);
      return 'too many pages from this address';
    }
    this.#pages++;
    this.#byAddress.set(key, held + 1);
    socket.once('close', () => {
      this.#pages--;
      const left = (this.#byAddress.get(key) ?? 1) - 1;
      if (left > 0) this.#byAddress.set(key, left);
      else this.#byAddress.delete(key);
    });
    return undefined;
  }

  /** The key of a peer that sends no X-Forwarded-For: parsed once per address, a storm comes from few. */
  #peerKey(peer: string | undefined): string {
    if (peer === undefined) return clientAddress(peer, undefined, this.#trusted);
    let key = this.#peerKeys.get(peer);
    if (key === undefined) {
      if (this.#peerKeys.size >= MAX_PEER_KEYS) this.#peerKeys.clear();
      key = clientAddress(peer, undefined, this.#trusted);
      this.#peerKeys.set(peer, key);
    }
    return key;
  }

  #warn(kind: string, message: string): void {
    const now = Date.now();
    if (now - (this.#warnedAt.get(kind) ?? 0) < WARN_EVERY_MS) return;
    this.#warnedAt.set(kind, now);
    this.#log.warn({ limit: kind }, `connection cap: ${message}`);
  }
}
