import { type CallClientFrame, type CallServerFrame, type ErrorFrame, userIdProblem } from '@realtime/protocol';
import type { RealtimeSocketError } from '../errors.js';
import { Call } from './call.js';
import { IncomingCall } from './incoming.js';
import type { CallLink, CallParty } from './link.js';
import { webRtcHere } from './media.js';
import { checkTokenAndMedia } from './token.js';
import type { CallOptions, RtcOptions } from './types.js';

/** How many ended refs and call ids are remembered, to drop late refusals of them. */
const DONE_KEPT = 100;

/** What the calls module needs from the client. */
export interface CallsHost {
  readonly ready: boolean;
  readonly session: number;
  send(frame: CallClientFrame): boolean;
  /** A call rings on this page: for `$call` listeners. */
  ring(incoming: IncomingCall): void;
}

/** A handler for each call frame the service sends. */
export type CallFrameHandlers = { [T in CallServerFrame['t']]: (frame: Extract<CallServerFrame, { t: T }>) => void };

/**
 * The client's calls: places them, routes the service's call frames and refusals to them by `ref`
 * and call id, and ends them when the page goes away or the socket is lost.
 *
 * A lost socket ends the page's calls (`failed`, error `disconnected`): the service ends a call
 * `failed` when a page of it goes without hanging up, and a new socket cannot take it back. A call
 * still waiting to be invited (getting its media or token, or waiting for the connection) waits for
 * the next socket instead.
 */
export class Calls {
  readonly #host: CallsHost;
  readonly #link: CallLink;
  readonly #routes = new Map<number | string, CallParty>();
  readonly #live = new Set<CallParty>();
  /**
   * Refs and ids of this socket's calls that ended here: a refusal of one comes from a race this page
   * already knows the end of (both sides hung up at once, a reject as the caller cancelled), and is
   * dropped rather than reported as `$error`.
   */
  readonly #done = new Set<number | string>();
  #waiters: { resolve(): void; reject(error: RealtimeSocketError): void }[] = [];
  /** Call frames count refs down from -1, so they never meet a room request's (counted up from 1). */
  #nextRef = -1;
  #closed: RealtimeSocketError | undefined;
  readonly #pageHide = (): void => this.leave();

  constructor(host: CallsHost, rtc: RtcOptions | undefined) {
    this.#host = host;
    checkRtc(rtc);
    this.#link = {
      rtc: { ...rtc },
      get ready() {
        return host.ready;
      },
      get session() {
        return host.session;
      },
      whenReady: () => this.whenReady(),
      send: (frame) => host.send(frame),
      nextRef: () => this.nextRef(),
      claim: (key, party) => {
        this.#routes.set(key, party);
      },
      release: (key, party) => {
        if (this.#routes.get(key) !== party) return;
        this.#routes.delete(key);
        this.#done.add(key);
        // Oldest first: a late refusal comes within a round trip, long before a hundred more ends.
        if (this.#done.size > DONE_KEPT) this.#done.delete(this.#done.values().next().value as number | string);
      },
      live: (party, on) => {
        if (on) this.#live.add(party);
        else this.#live.delete(party);
      },
    };
    // The service hears the hangups of a page being closed, rather than a socket that dropped.
    globalThis.addEventListener?.('pagehide', this.#pageHide);
  }

  place(to: string, options: CallOptions): Call {
    const problem = typeof to === 'string' ? userIdProblem(to) : 'the user to call is a user id string';
    if (problem) throw new TypeError(problem);
    checkTokenAndMedia(options, 'call');
    const { token, media } = options;
    if (!webRtcHere()) throw new TypeError('calls need WebRTC (RTCPeerConnection and MediaStream), not found here');
    return new Call({ direction: 'outgoing', peer: to, token, media: media ?? { audio: true } }, this.#link);
  }

  frameHandlers(): CallFrameHandlers {
    const byRef = (ref: unknown) => (typeof ref === 'number' ? this.#routes.get(ref) : undefined);
    const byCall = (call: unknown) => (typeof call === 'string' ? this.#routes.get(call) : undefined);
    return {
      'call.placed': (frame) => byRef(frame.ref)?.placed(frame),
      'call.accepted': (frame) => byRef(frame.ref)?.accepted(),
      'call.ring': (frame) => {
        if (typeof frame.call !== 'string' || typeof frame.from !== 'string' || this.#routes.has(frame.call)) return;
        this.#host.ring(new IncomingCall(frame, this.#link));
      },
      'call.answered': (frame) => byCall(frame.call)?.answered(),
      'call.signal': (frame) => {
        if (typeof frame.data === 'object' && frame.data !== null) byCall(frame.call)?.signal(frame.data);
      },
      'call.ended': (frame) => byCall(frame.call)?.ended(frame.reason),
    };
  }

  /** Takes an error frame that refused one of the calls' frames (by its ref, else its call id). */
  ownsError(frame: ErrorFrame, error: RealtimeSocketError): boolean {
    const ref = typeof frame.ref === 'number' ? frame.ref : undefined;
    const call = typeof frame.call === 'string' ? frame.call : undefined;
    const party =
      (ref === undefined ? undefined : this.#routes.get(ref)) ??
      (call === undefined ? undefined : this.#routes.get(call));
    if (party) {
      party.refused(error);
      return true;
    }
    return (ref !== undefined && this.#done.has(ref)) || (call !== undefined && this.#done.has(call));
  }

  welcome(): void {
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
  }

  lost(error: RealtimeSocketError, final: boolean): void {
    if (final) {
      this.#closed = error;
      for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
      globalThis.removeEventListener?.('pagehide', this.#pageHide);
    }
    for (const party of [...this.#live]) party.lost(error, final);
  }

  /** Hangs up every call (rings go on on the user's other pages). */
  leave(): void {
    for (const party of [...this.#live]) party.leave();
  }

  /** The WebRTC options of the client (group calls use them too). */
  get rtc(): RtcOptions {
    return this.#link.rtc;
  }

  /** A ref for a call or group call frame: counted down, so it never meets a room request's. */
  nextRef(): number {
    return this.#nextRef--;
  }

  /** Resolves at the next welcome (at once when ready); rejects once the client is closed. */
  whenReady(): Promise<void> {
    if (this.#host.ready) return Promise.resolve();
    if (this.#closed) return Promise.reject(this.#closed);
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }
}

function checkRtc(rtc: RtcOptions | undefined): void {
  if (rtc === undefined) return;
  if (typeof rtc !== 'object' || rtc === null) throw new TypeError('`rtc` must be an object');
  if (rtc.candidateFilter !== undefined && typeof rtc.candidateFilter !== 'function') {
    throw new TypeError('`rtc.candidateFilter` must be a function');
  }
  const ms = rtc.connectTimeoutMs;
  if (ms !== undefined && !(Number.isFinite(ms) && ms > 0))
    throw new TypeError('`rtc.connectTimeoutMs` must be positive');
  if (rtc.simulcast !== undefined && typeof rtc.simulcast !== 'boolean') {
    throw new TypeError('`rtc.simulcast` must be true or false');
  }
}
