import { Peer } from '../calls/peer.js';
import { GroupError } from './errors.js';
import { DEFAULT_CONNECT_TIMEOUT_MS, type PeerNet } from './remote-peer.js';

/**
 * A page whose media its unit lost, or whose connection to it failed, offers again this many times
 * in a row (as a live stream's presenter does); one more and the group call fails (`peer_failed`).
 */
export const UPLINK_RESTARTS = 3;

/** What the connection to the page's own unit tells its group. */
export interface UnitUplinkHooks {
  /** A description or candidate for the page's own unit, as `group.signal` data with `to` the page's own id. */
  signal(data: Record<string, unknown>): void;
  /** The media could not reach the unit, offers again included: the group call fails. */
  failed(error: GroupError): void;
}

/**
 * In unit mode, the page's media going once to the forwarding unit the service runs for it (which
 * sends it on to each other page): a send-only offer, the unit's answer, candidates both ways. The
 * unit's `{ restart: true }`, a failed connection, or one that did not connect in time, make a
 * new offer on a new connection, a few times in a row.
 */
export class UnitUplink {
  readonly #group: string;
  readonly #net: PeerNet;
  readonly #local: MediaStream;
  readonly #hooks: UnitUplinkHooks;
  #rtc: Peer | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #restarts = 0;
  #closed = false;
  /** The unit answered the latest offer. */
  #answered = false;

  constructor(group: string, net: PeerNet, local: MediaStream, hooks: UnitUplinkHooks) {
    this.#group = group;
    this.#net = net;
    this.#local = local;
    this.#hooks = hooks;
  }

  /** The connection sending the page's media to its unit (the latest offer's). */
  get connection(): RTCPeerConnection | undefined {
    return this.#rtc?.connection;
  }

  /** An offer is out and its answer has not come: a refused signal of the page is that offer. */
  get offering(): boolean {
    return this.#rtc !== undefined && !this.#closed && !this.#answered;
  }

  /** Offers the page's media to its unit. */
  start(): void {
    if (this.#closed || this.#rtc) return;
    this.#offer();
  }

  /** A `group.signal` from the page's own id: the unit's answer, a candidate, or `{ restart: true }`. */
  receive(data: Record<string, unknown>): void {
    if (this.#closed) return;
    if (data.restart === true) {
      this.#again('the forwarding unit lost the media of this page');
      return;
    }
    if (isAnswer(data.sdp)) this.#answered = true;
    this.#rtc?.receive(data);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closePeer();
  }

  #offer(): void {
    this.#answered = false;
    let rtc: Peer;
    try {
      rtc = new Peer(
        this.#net.ice,
        this.#net.rtc,
        this.#local,
        {
          signal: (data) => {
            if (this.#rtc === rtc && !this.#closed) this.#hooks.signal(data);
          },
          track: () => {},
          connected: () => {
            if (this.#rtc !== rtc) return;
            this.#clearTimer();
            this.#restarts = 0;
          },
          failed: (error) => {
            if (this.#rtc === rtc) this.#again(`the media to the forwarding unit failed: ${error.message}`);
          },
        },
        { sendOnly: true },
      );
    } catch (cause) {
      this.#end(new GroupError('peer_failed', 'could not make the WebRTC connection', { group: this.#group, cause }));
      return;
    }
    this.#rtc = rtc;
    const ms = this.#net.rtc.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#timer = setTimeout(() => {
      if (this.#rtc === rtc) this.#again(`the media to the forwarding unit did not connect within ${ms} ms`);
    }, ms);
    rtc.offer();
  }

  /** A new offer on a new connection, unless this is one time too many. */
  #again(why: string): void {
    if (this.#closed) return;
    this.#closePeer();
    if (this.#restarts >= UPLINK_RESTARTS) {
      const message = `${why} (${this.#restarts + 1} times in a row)`;
      this.#end(new GroupError('peer_failed', message, { group: this.#group }));
      return;
    }
    this.#restarts++;
    this.#offer();
  }

  #end(error: GroupError): void {
    this.close();
    this.#hooks.failed(error);
  }

  #closePeer(): void {
    this.#clearTimer();
    this.#rtc?.close();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function isAnswer(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'answer';
}
