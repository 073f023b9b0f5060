import type { CallRingFrame, IceServer } from '@realtime/protocol';
import { type AnyListener, Emitter } from '../emitter.js';
import { Call, CONFIRM_MS } from './call.js';
import { CallError } from './errors.js';
import type { CallLink, CallParty } from './link.js';
import { webRtcHere } from './media.js';
import type { AcceptOptions, CallEnd, CallMediaKind } from './types.js';

/**
 * Where an {@link IncomingCall} is: `ringing`; `accepted` or `rejected` by this page; or `ended`
 * (it stopped ringing here: taken on another page, cancelled, missed, or the page lost the socket).
 */
export type IncomingCallState = 'ringing' | 'accepted' | 'rejected' | 'ended';

/**
 * Listeners of an {@link IncomingCall}, by event name.
 *
 * @example
 * incoming.on('ended', ({ reason }) => hideRinger(reason)); // 'elsewhere', 'cancelled', 'missed', ...
 */
export interface IncomingCallEvents {
  /**
   * It stopped ringing on this page without this page taking it: `elsewhere` (another page of the
   * user accepted or rejected it), `cancelled`, `missed`, `rejected` (by this page), or `failed`
   * (with `error`, e.g. the socket was lost). Not fired after {@link IncomingCall.accept}: the
   * {@link Call} goes on from there.
   */
  ended: (end: CallEnd) => void;
}

/**
 * A call ringing on this page, given to `client.on('$call', ...)`. Every open page of the callee
 * rings; the first to accept takes the call, and the others hear `ended` with reason `elsewhere`.
 * Unanswered, it ends `missed` when the service's ring time is up.
 *
 * @example
 * client.on('$call', (incoming) => {
 *   const ringer = showRinger(incoming.from, incoming.media.includes('video'));
 *   ringer.onAccept = () => startCallUi(incoming.accept());
 *   ringer.onDecline = () => incoming.reject();
 *   incoming.on('ended', () => ringer.close());
 * });
 */
export class IncomingCall {
  /** The call's id (the webhook's `call_id`). */
  readonly id: string;
  /** The caller's user id. */
  readonly from: string;
  /** What the caller's call token allows: `['audio']` or `['audio', 'video']`. */
  readonly media: readonly CallMediaKind[];

  readonly #link: CallLink;
  readonly #ice: readonly IceServer[];
  readonly #emitter = new Emitter();
  readonly #party: CallParty;
  #state: IncomingCallState = 'ringing';
  #end: CallEnd | undefined;
  #call: Call | undefined;
  #confirmTimer: ReturnType<typeof setTimeout> | undefined;

  /** Made by the SDK when a call rings. */
  constructor(frame: CallRingFrame, link: CallLink) {
    this.id = frame.call;
    this.from = frame.from;
    this.media = Array.isArray(frame.media) ? [...frame.media] : ['audio'];
    this.#ice = Array.isArray(frame.ice) ? frame.ice : [];
    this.#link = link;
    const ignore = (): void => {};
    this.#party = {
      placed: ignore,
      accepted: ignore,
      answered: ignore,
      signal: ignore,
      ended: (reason) => this.#over({ reason }),
      refused: (error) => this.#over({ reason: 'failed', error: CallError.of(error, this.id) }),
      lost: (error) => this.#over({ reason: 'failed', error: CallError.of(error, this.id) }),
      // A page going away leaves the call ringing on the user's other pages.
      leave: ignore,
    };
    link.claim(this.id, this.#party);
    link.live(this.#party, true);
  }

  get state(): IncomingCallState {
    return this.#state;
  }

  /**
   * Takes the call on this page: the other pages stop ringing, the SDK gets the media (default:
   * audio, and video for a video call) and connects to the caller. Accepting again gives the same
   * {@link Call}; accepting a call that already stopped ringing gives a Call already ended with why.
   * Throws a TypeError where there is no WebRTC.
   *
   * @example
   * const call = incoming.accept({ media: { audio: true, video: { width: 1280 } } });
   * call.on('remote', (_track, stream) => (video.srcObject = stream));
   */
  accept(options: AcceptOptions = {}): Call {
    if (this.#call) return this.#call;
    if (!webRtcHere()) throw new TypeError('calls need WebRTC (RTCPeerConnection and MediaStream), not found here');
    const base = { direction: 'incoming', peer: this.from, id: this.id } as const;
    if (this.#state !== 'ringing') {
      this.#call = new Call({ ...base, over: this.#end ?? { reason: 'rejected' } }, this.#link);
      return this.#call;
    }
    this.#state = 'accepted';
    this.#link.live(this.#party, false);
    const media = options.media ?? { audio: true, video: this.media.includes('video') };
    // The call takes over this id's frames.
    this.#call = new Call({ ...base, ice: this.#ice, media }, this.#link);
    return this.#call;
  }

  /** Declines the call for all of the user's pages: the caller's call ends `rejected`. */
  reject(): void {
    if (this.#state !== 'ringing') return;
    this.#state = 'rejected';
    if (!this.#link.send({ t: 'call.reject', call: this.id })) {
      this.#over({
        reason: 'failed',
        error: new CallError('disconnected', 'the connection is down: the call could not be rejected', {
          call: this.id,
        }),
      });
      return;
    }
    this.#confirmTimer = setTimeout(() => this.#over({ reason: 'rejected' }), CONFIRM_MS);
  }

  /** Adds a listener; returns a function that removes it. */
  on<E extends keyof IncomingCallEvents>(name: E, listener: IncomingCallEvents[E]): () => void {
    return this.#emitter.on(name, listener as AnyListener);
  }

  off<E extends keyof IncomingCallEvents>(name: E, listener: IncomingCallEvents[E]): void {
    this.#emitter.off(name, listener as AnyListener);
  }

  #over(end: CallEnd): void {
    if (this.#state !== 'ringing' && this.#state !== 'rejected') return;
    this.#state = 'ended';
    this.#end = end;
    if (this.#confirmTimer !== undefined) clearTimeout(this.#confirmTimer);
    this.#link.release(this.id, this.#party);
    this.#link.live(this.#party, false);
    this.#emitter.emit('ended', end);
  }
}
