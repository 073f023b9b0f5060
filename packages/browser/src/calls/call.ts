import type { CallPlacedFrame, IceServer } from '@realtime/protocol';
import { type AnyListener, Emitter } from '../emitter.js';
import type { RealtimeSocketError } from '../errors.js';
import type { TokenSource } from '../room.js';
import { CallError } from './errors.js';
import type { CallLink, CallParty } from './link.js';
import { type LocalMedia, localMedia, releaseMedia } from './media.js';
import { Peer } from './peer.js';
import { tokenText } from './token.js';
import type { CallDirection, CallEnd, CallEndedReason, CallMediaSource, CallState } from './types.js';

/** After this page ends a call, how long it waits for the service to say why before it guesses. */
export const CONFIRM_MS = 5_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;

/** How a {@link Call} starts: placed by this page, accepted on this page, or over before it began. */
export type CallInit =
  | { direction: 'outgoing'; peer: string; token: TokenSource; media: CallMediaSource }
  | { direction: 'incoming'; peer: string; id: string; ice: readonly IceServer[]; media: CallMediaSource }
  | { direction: 'incoming'; peer: string; id: string; over: CallEnd };

/**
 * Listeners of a {@link Call}, by event name.
 *
 * @example
 * call.on('state', (state, previous) => console.log(previous, '->', state));
 * call.on('local', (stream) => (preview.srcObject = stream));
 * call.on('remote', (track, stream) => (video.srcObject = stream));
 * call.on('ended', ({ reason, error }) => showEnded(reason, error));
 */
export interface CallEvents {
  /** The call moved to another {@link CallState}. */
  state: (state: CallState, previous: CallState) => void;
  /** This page's media is here ({@link Call.localStream}): for a preview, before the call is even placed. */
  local: (stream: MediaStream) => void;
  /** A track of the peer arrived; `stream` is {@link Call.remoteStream}, which now holds it. */
  remote: (track: MediaStreamTrack, stream: MediaStream) => void;
  /** The call is over, and why (as {@link Call.ended} gives it). */
  ended: (end: CallEnd) => void;
}

/**
 * A call between this page's user and another person: placed with `client.call`, or accepted with
 * {@link IncomingCall.accept}. The service carries the signalling; media flows page to page.
 *
 * When the page hangs up, the call's media stops at once and its state is `ended`; `ended` and the
 * `ended` event follow with the reason the service gives (the webhook's), usually one round trip
 * later. A call that ends by an error has reason `failed` and the error in `error`; `ended` never rejects.
 *
 * The SDK stops the tracks it got with `getUserMedia` when the call ends; a `MediaStream` the page
 * passed in stays the page's.
 *
 * @example
 * const call = client.call('bob', { token: () => fetchCallToken('bob'), media: { audio: true, video: true } });
 * call.on('state', (state) => (status.textContent = state));
 * call.on('remote', (_track, stream) => (remoteVideo.srcObject = stream));
 * call.on('local', (stream) => (localVideo.srcObject = stream));
 * hangupButton.onclick = () => call.hangup();
 * const { reason, error } = await call.ended; // 'completed', 'busy', 'rejected', 'missed', ...
 */
export class Call {
  /** The other person's user id. */
  readonly peer: string;
  readonly direction: CallDirection;
  /** The peer's media: a stream that receives their tracks as they arrive (give it to a `<video>` at once). */
  readonly remoteStream: MediaStream;
  /** Settles once, when the call is over, with why; never rejects. */
  readonly ended: Promise<CallEnd>;

  readonly #link: CallLink;
  readonly #emitter = new Emitter();
  readonly #party: CallParty;
  #settle: (end: CallEnd) => void = () => {};
  #settled = false;
  #state: CallState;
  #id: string | undefined;
  #ice: readonly IceServer[] = [];
  #media: LocalMedia | undefined;
  #rtc: Peer | undefined;
  /** The ref of the invite or accept the service has not answered yet. */
  #ref: number | undefined;
  /** The socket this call's frames went on: another socket cannot speak for it. */
  #session: number | undefined;
  /** Answered (caller) or accepted (callee): ending it now is `completed`, not `cancelled`. */
  #answered = false;
  #failed = false;
  /** Signals that came before the peer connection (the callee still getting its media). */
  #early: Record<string, unknown>[] = [];
  #connectTimer: ReturnType<typeof setTimeout> | undefined;
  #confirmTimer: ReturnType<typeof setTimeout> | undefined;

  /** Use `client.call` or {@link IncomingCall.accept}. */
  constructor(init: CallInit, link: CallLink) {
    this.peer = init.peer;
    this.direction = init.direction;
    this.#link = link;
    this.remoteStream = new MediaStream();
    this.ended = new Promise<CallEnd>((resolve) => {
      this.#settle = resolve;
    });
    this.#party = {
      placed: (frame) => this.#placed(frame),
      accepted: () => this.#forgetRef(),
      answered: () => this.#answeredNow(),
      signal: (data) => this.#signal(data),
      ended: (reason) => this.#endedBy(reason),
      refused: (error) => this.#refused(error),
      lost: (error, final) => this.#lost(error, final),
      leave: () => void this.hangup(),
    };
    if ('over' in init) {
      this.#id = init.id;
      this.#state = 'ended';
      this.#settleWith(init.over);
      return;
    }
    link.live(this.#party, true);
    if (init.direction === 'outgoing') {
      this.#state = 'calling';
      void this.#dial(init.peer, init.token, init.media);
    } else {
      this.#id = init.id;
      this.#ice = init.ice;
      this.#state = 'connecting';
      this.#take(init.id, init.media);
    }
  }

  /** The call's id (the webhook's `call_id`), once the service placed it; the callee's page has it at once. */
  get id(): string | undefined {
    return this.#id;
  }

  get state(): CallState {
    return this.#state;
  }

  /** What this page sends, once it has it (a caller's page gets it before the call is placed). */
  get localStream(): MediaStream | undefined {
    return this.#media?.stream;
  }

  /** The WebRTC connection, from the answer on (for `getStats`, or to swap tracks with `replaceTrack`). */
  get peerConnection(): RTCPeerConnection | undefined {
    return this.#rtc?.connection;
  }

  /** Adds a listener; returns a function that removes it. */
  on<E extends keyof CallEvents>(name: E, listener: CallEvents[E]): () => void {
    return this.#emitter.on(name, listener as AnyListener);
  }

  off<E extends keyof CallEvents>(name: E, listener: CallEvents[E]): void {
    this.#emitter.off(name, listener as AnyListener);
  }

  /**
   * Ends the call: stops its media now and tells the service (a caller hanging up before the answer
   * cancels it). Returns {@link Call.ended}. Hanging up an ended call does nothing.
   *
   * @example
   * const { reason } = await call.hangup(); // 'completed' once answered, 'cancelled' while ringing
   */
  hangup(): Promise<CallEnd> {
    if (this.#state !== 'ended') {
      this.#teardown();
      if (this.#id !== undefined) {
        if (this.#sendHangup()) this.#awaitWord();
        else this.#over({ reason: this.#guess() });
      } else if (this.#ref !== undefined && this.#session === this.#link.session) {
        // Invited, not yet placed: the hangup goes when the id comes.
        this.#awaitWord();
      } else {
        this.#over({ reason: this.#guess() });
      }
    }
    return this.ended;
  }

  async #dial(to: string, token: TokenSource, source: CallMediaSource): Promise<void> {
    const [media, text] = await Promise.allSettled([localMedia(source), tokenText(token)]);
    if (media.status === 'fulfilled') {
      if (this.#state === 'ended') releaseMedia(media.value);
      else this.#gotMedia(media.value);
    }
    if (this.#state === 'ended') return;
    if (media.status === 'rejected') return this.#fail(callError(media.reason, 'media_failed'), false);
    if (text.status === 'rejected') return this.#fail(callError(text.reason, 'token_failed'), false);
    for (;;) {
      try {
        await this.#link.whenReady();
      } catch (error) {
        return this.#fail(callError(error, 'closed'), false);
      }
      // Hung up while waiting (the state changes behind the await).
      if (this.#isOver()) return;
      const ref = this.#link.nextRef();
      this.#link.claim(ref, this.#party);
      if (this.#link.send({ t: 'call.invite', ref, to, token: text.value })) {
        this.#ref = ref;
        this.#session = this.#link.session;
        return;
      }
      // The socket went between the welcome and now: the invite goes on the next one.
      this.#link.release(ref, this.#party);
    }
  }

  #take(id: string, source: CallMediaSource): void {
    this.#answered = true;
    const ref = this.#link.nextRef();
    this.#link.claim(ref, this.#party);
    this.#link.claim(id, this.#party);
    if (!this.#link.send({ t: 'call.accept', ref, call: id })) {
      this.#fail(
        new CallError('disconnected', 'the connection is down: the call could not be accepted', { call: id }),
        false,
      );
      return;
    }
    this.#ref = ref;
    this.#session = this.#link.session;
    // Accepted at once, so the other pages stop ringing while this one asks for the camera.
    localMedia(source).then(
      (media) => {
        if (this.#state === 'ended') {
          releaseMedia(media);
          return;
        }
        this.#gotMedia(media);
        this.#startPeer();
      },
      (error: unknown) => this.#fail(callError(error, 'media_failed'), true),
    );
  }

  #gotMedia(media: LocalMedia): void {
    this.#media = media;
    this.#emitter.emit('local', media.stream);
  }

  #placed(frame: CallPlacedFrame): void {
    this.#forgetRef();
    if (typeof frame.call !== 'string') return;
    this.#id = frame.call;
    this.#ice = Array.isArray(frame.ice) ? frame.ice : [];
    this.#link.claim(frame.call, this.#party);
    if (this.#state === 'ended') {
      // Hung up before the service placed it.
      if (!this.#sendHangup()) this.#over({ reason: this.#guess() });
      return;
    }
    this.#move('ringing');
  }

  #answeredNow(): void {
    if (this.#state !== 'ringing') return;
    this.#answered = true;
    this.#move('connecting');
    this.#startPeer();
    this.#rtc?.offer();
  }

  #startPeer(): void {
    try {
      this.#rtc = new Peer(this.#ice, this.#link.rtc, this.#media?.stream ?? new MediaStream(), {
        signal: (data) => {
          if (this.#id !== undefined && this.#session === this.#link.session) {
            this.#link.send({ t: 'call.signal', call: this.#id, data });
          }
        },
        track: (track) => {
          if (!this.remoteStream.getTrackById(track.id)) this.remoteStream.addTrack(track);
          this.#emitter.emit('remote', track, this.remoteStream);
        },
        connected: () => {
          this.#clearConnectTimer();
          if (this.#state === 'connecting') this.#move('connected');
        },
        failed: (error) => this.#fail(CallError.of(error, this.#id), true),
      });
    } catch (cause) {
      this.#fail(new CallError('peer_failed', 'could not make the WebRTC connection', { call: this.#id, cause }), true);
      return;
    }
    const ms = this.#link.rtc.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#connectTimer = setTimeout(() => {
      if (this.#state === 'connecting') {
        this.#fail(new CallError('peer_failed', `the media did not connect within ${ms} ms`, { call: this.#id }), true);
      }
    }, ms);
    for (const data of this.#early.splice(0)) this.#rtc.receive(data);
  }

  #signal(data: Record<string, unknown>): void {
    if (this.#state === 'ended' || typeof data !== 'object' || data === null) return;
    if (this.#rtc) this.#rtc.receive(data);
    else this.#early.push(data);
  }

  #endedBy(reason: CallEndedReason): void {
    this.#teardown();
    this.#over({ reason });
  }

  #refused(error: RealtimeSocketError): void {
    const refusal = CallError.of(error, this.#id);
    if (this.#state === 'ended') {
      // A late frame of a call this page already ended (its hangup, a last candidate): the call is gone.
      this.#over({ reason: this.#guess() });
      return;
    }
    // Once the call is under way, a refused signal leaves it useless: hang up, unless the service says it is gone.
    // A refused invite or accept never started a call this page may end.
    const underWay = this.#answered && this.#ref === undefined && error.code !== 'no_call';
    this.#fail(refusal, underWay);
  }

  #lost(error: RealtimeSocketError, final: boolean): void {
    if (this.#state === 'ended') {
      this.#over({ reason: this.#guess() });
      return;
    }
    // Not yet invited: the invite goes on the next socket.
    if (this.#session === undefined && !final) return;
    // The service ends the call `failed` when a page of it goes without hanging up: this page cannot take it back.
    this.#fail(CallError.of(error, this.#id), false);
  }

  /** Ends the call by an error: `failed`, the error in `error`; tells the service when `tell`. */
  #fail(error: CallError, tell: boolean): void {
    if (this.#state === 'ended') return;
    this.#failed = true;
    this.#teardown();
    const told = tell && this.#id !== undefined && this.#sendHangup();
    this.#settleWith({ reason: 'failed', error });
    if (told) this.#awaitWord();
    else this.#over({ reason: 'failed', error });
  }

  #sendHangup(): boolean {
    if (this.#id === undefined || this.#session !== this.#link.session) return false;
    return this.#link.send(
      this.#failed ? { t: 'call.hangup', call: this.#id, failed: true } : { t: 'call.hangup', call: this.#id },
    );
  }

  /** Keeps hearing the call's frames until the service's `call.ended`, or guesses after a while. */
  #awaitWord(): void {
    this.#confirmTimer ??= setTimeout(() => this.#over({ reason: this.#guess() }), CONFIRM_MS);
  }

  /** What the service will say when this page ended the call itself. */
  #guess(): CallEndedReason {
    if (this.#failed) return 'failed';
    return this.direction === 'outgoing' && !this.#answered ? 'cancelled' : 'completed';
  }

  /** The end: settled (if not yet) and no longer routed. */
  #over(end: CallEnd): void {
    this.#settleWith(end);
    this.#forgetRef();
    if (this.#id !== undefined) this.#link.release(this.#id, this.#party);
    this.#link.live(this.#party, false);
    if (this.#confirmTimer !== undefined) clearTimeout(this.#confirmTimer);
    this.#confirmTimer = undefined;
  }

  #settleWith(end: CallEnd): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle(end);
    this.#emitter.emit('ended', end);
  }

  #forgetRef(): void {
    if (this.#ref !== undefined) this.#link.release(this.#ref, this.#party);
    this.#ref = undefined;
  }

  /** Stops media and the connection; state `ended`. */
  #teardown(): void {
    if (this.#state === 'ended') return;
    this.#clearConnectTimer();
    this.#rtc?.close();
    releaseMedia(this.#media);
    this.#early = [];
    this.#move('ended');
  }

  #isOver(): boolean {
    return this.#state === 'ended';
  }

  #clearConnectTimer(): void {
    if (this.#connectTimer !== undefined) clearTimeout(this.#connectTimer);
    this.#connectTimer = undefined;
  }

  #move(state: CallState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#emitter.emit('state', state, previous);
  }
}

/** The error as a CallError: its own when it is one, else `code` with it as the cause. */
function callError(error: unknown, code: 'media_failed' | 'token_failed' | 'closed'): CallError {
  if (error instanceof CallError) return error;
  if (error instanceof Error && 'code' in error && typeof error.code === 'string') {
    return new CallError(error.code, error.message, { cause: error });
  }
  return new CallError(code, error instanceof Error ? error.message : String(error), { cause: error });
}
