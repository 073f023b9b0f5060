import type { IceServer, StreamPresentingFrame, StreamWatchingFrame, VideoWantsData } from '@realtime/protocol';
import { AdaptiveVideo } from '../calls/adaptive-video.js';
import { type LocalMedia, localMedia, releaseMedia } from '../calls/media.js';
import { Peer } from '../calls/peer.js';
import { type AnyListener, Emitter } from '../emitter.js';
import type { RealtimeSocketError } from '../errors.js';
import { StreamError } from './errors.js';
import { grantRole, grantText } from './grant.js';
import type { StreamLink, StreamParty } from './link.js';
import type { StreamLeave, StreamLiveInfo, StreamOptions, StreamRole, StreamState } from './types.js';

/** After this page leaves, how long it waits for the service's `stream.left` before it stops listening. */
export const LEAVE_CONFIRM_MS = 5_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
/**
 * A viewer whose media fails asks for a fresh offer, and a presenter whose media the unit lost offers
 * again, this many times in a row before the page gives up and leaves (`peer_failed`).
 */
export const MAX_RESTARTS = 3;

/**
 * Listeners of a {@link LiveStream}, by event name.
 *
 * @example
 * stream.on('remote', (_track, media) => (video.srcObject = media)); // a new MediaStream each live run
 * stream.on('live', ({ startedAt }) => showLive(startedAt));
 * stream.on('ended', () => showOffAir());
 * stream.on('left', ({ error }) => error && toast(error.code));
 */
export interface LiveStreamEvents {
  /** The page moved to another {@link StreamState}. */
  state: (state: StreamState, previous: StreamState) => void;
  /** The stream is live: it went live, or this viewer came while it was. */
  live: (info: StreamLiveInfo) => void;
  /** The live run ended (the presenter left, closed, or its media failed); viewers stay for the next one. */
  ended: () => void;
  /** A presenter's own media ({@link LiveStream.localStream}), for a preview, before it is sent. */
  local: (stream: MediaStream) => void;
  /** A track of the presenter reached this viewer; `stream` is {@link LiveStream.remoteStream}, new for each offer. */
  remote: (track: MediaStreamTrack, stream: MediaStream) => void;
  /** The page is off the stream for good, and why (as {@link LiveStream.left} gives it). */
  left: (leave: StreamLeave) => void;
}

/**
 * This page on a live stream (`client.stream`): its presenter, sending the camera and microphone to
 * the service's forwarding unit, or one of its viewers, receiving them from there. The service
 * carries the signalling over the page's socket.
 *
 * A viewer may come before the stream is live: it waits (`waiting`), and gets the media each time
 * the stream goes live, in a new {@link LiveStream.remoteStream}; it stays on the stream across
 * runs until it leaves. A presenter's leaving ends the run for everyone.
 *
 * A lost socket takes the page off the stream; the SDK puts it back on the next socket (the grant
 * function is called again). `pagehide` and `client.close()` leave.
 *
 * @example
 * const stream = client.stream('keynote', { grant: () => fetch('/rt/grant/keynote').then((r) => r.text()) });
 * stream.on('remote', (_track, media) => (video.srcObject = media));
 * stream.on('state', (state) => (badge.textContent = state)); // joining, waiting, connecting, live, left
 * leaveButton.onclick = () => stream.leave();
 */
export class LiveStream {
  /** The stream's name (the grant's `stream`). */
  readonly name: string;
  /** Settles once, when the page is off the stream for good; never rejects. */
  readonly left: Promise<StreamLeave>;

  readonly #link: StreamLink;
  readonly #options: StreamOptions;
  readonly #emitter = new Emitter();
  readonly #party: StreamParty;
  #settle: (leave: StreamLeave) => void = () => {};
  #settled = false;
  #state: StreamState = 'joining';
  #role: StreamRole | undefined;
  #media: LocalMedia | undefined;
  #rtc: Peer | undefined;
  #remote: MediaStream | undefined;
  #ice: readonly IceServer[] = [];
  /** The ref of the present or watch the service has not answered yet. */
  #ref: number | undefined;
  #leaveRef: number | undefined;
  /** The socket the present or watch went on: frames of another socket cannot speak for it. */
  #session: number | undefined;
  /** The service took the page on the stream (on this socket). */
  #on = false;
  /** The page was on the stream (or asked to be) when its socket went: it goes back on the next one. */
  #rejoin = false;
  #live = false;
  #startedAt: number | undefined;
  #restarts = 0;
  #connectTimer: ReturnType<typeof setTimeout> | undefined;
  #confirmTimer: ReturnType<typeof setTimeout> | undefined;
  /** What a viewer asks of the presenter's video at the unit (adaptive stream). */
  readonly #video = new AdaptiveVideo((wants) => this.#sendVideo(wants));
  /** The elements {@link LiveStream.attach} shows the video in: each run's new stream goes to them. */
  readonly #shown = new Set<HTMLMediaElement>();

  /** Use `client.stream`. */
  constructor(name: string, options: StreamOptions, link: StreamLink) {
    this.name = name;
    this.#options = options;
    this.#link = link;
    this.left = new Promise<StreamLeave>((resolve) => {
      this.#settle = resolve;
    });
    this.#party = {
      entered: (frame) => this.#entered(frame),
      leftAnswer: () => this.#over(),
      live: (frame) => this.#wentLive(typeof frame.started_at === 'number' ? frame.started_at : undefined),
      ended: () => this.#runEnded(),
      signal: (data) => this.#signal(data),
      refused: (error) => this.#refused(error),
      welcome: () => this.#welcome(),
      lost: (error, final) => this.#lost(error, final),
      leave: () => void this.leave(),
    };
    link.live(name, this.#party, true);
    void this.#start();
  }

  get state(): StreamState {
    return this.#state;
  }

  /** `presenter` or `viewer`, once the grant is in (the `role` option, else the grant's claim). */
  get role(): StreamRole | undefined {
    return this.#role;
  }

  /** Whether the stream is live, as this page last heard. */
  get live(): boolean {
    return this.#live;
  }

  /** When the current live run started (ms), when this page heard it go live. */
  get startedAt(): number | undefined {
    return this.#startedAt;
  }

  /** A presenter's media, once it has it. */
  get localStream(): MediaStream | undefined {
    return this.#media?.stream;
  }

  /** A viewer's media of the current (or last) live run: a new MediaStream with each offer of the unit. */
  get remoteStream(): MediaStream | undefined {
    return this.#remote;
  }

  /** The WebRTC connection to the forwarding unit (for `getStats`); a viewer gets a new one with each offer. */
  get peerConnection(): RTCPeerConnection | undefined {
    return this.#rtc?.connection;
  }

  /** Adds a listener; returns a function that removes it. */
  on<E extends keyof LiveStreamEvents>(name: E, listener: LiveStreamEvents[E]): () => void {
    return this.#emitter.on(name, listener as AnyListener);
  }

  off<E extends keyof LiveStreamEvents>(name: E, listener: LiveStreamEvents[E]): void {
    this.#emitter.off(name, listener as AnyListener);
  }

  /**
   * Adaptive stream, for a viewer: the largest size the page shows the video at (device pixels:
   * CSS px times `devicePixelRatio`), so the forwarding unit sends no larger layer; no argument lifts
   * the bound. Kept, and sent again to each new session of the unit (a new run, a restart). A
   * presenter's does nothing. Throws a RangeError for a size that is not a positive number.
   *
   * @example
   * stream.setVideoSize(640 * devicePixelRatio, 360 * devicePixelRatio);
   */
  setVideoSize(width?: number, height?: number): void {
    this.#video.setSize(width, height);
  }

  /** For a viewer: no video from the unit until {@link LiveStream.resumeVideo} (the audio goes on). */
  pauseVideo(): void {
    this.#video.pause();
  }

  resumeVideo(): void {
    this.#video.resume();
  }

  /**
   * For a viewer: shows the presenter's media in `element` (its `srcObject`: each run's
   * {@link LiveStream.remoteStream}) and fits the video to it, as LiveKit's adaptive stream does: the
   * element's size times `devicePixelRatio`, watched as it changes (told once it settles, ~150 ms),
   * and paused while it is off screen, zero-sized, or the tab is hidden (resumed at once when shown).
   * While an element is attached, it decides, not {@link LiveStream.setVideoSize}. Returns a function
   * that stops (and clears `srcObject` if it is still the stream's).
   *
   * @example
   * const detach = stream.attach(document.querySelector('video')!);
   */
  attach(element: HTMLMediaElement): () => void {
    if (this.#state === 'left') return () => {};
    this.#shown.add(element);
    if (this.#remote && element.srcObject !== this.#remote) element.srcObject = this.#remote;
    const stop = this.#video.attach(element);
    return () => {
      stop();
      if (!this.#shown.delete(element)) return;
      if (this.#remote && element.srcObject === this.#remote) element.srcObject = null;
    };
  }

  /**
   * Leaves the stream: stops the media now (state `left`) and tells the service; a presenter's
   * leaving ends the live run. Returns {@link LiveStream.left}, which settles once the service
   * answers. Leaving again does nothing.
   *
   * @example
   * await stream.leave(); // then client.stream(name, ...) may present or watch again
   */
  leave(): Promise<StreamLeave> {
    if (this.#state !== 'left') {
      const sent = this.#sendLeave();
      this.#teardown();
      if (sent) this.#awaitWord();
      else this.#over();
    }
    return this.left;
  }

  async #start(): Promise<void> {
    let grant: string;
    try {
      grant = await grantText(this.#options.grant, this.name);
    } catch (error) {
      return this.#fail(StreamError.of(error, this.name, 'token_failed'));
    }
    if (this.#isLeft()) return;
    this.#role = this.#options.role ?? grantRole(grant) ?? 'viewer';
    if (this.#role === 'presenter') {
      let media: LocalMedia;
      try {
        media = await localMedia(this.#options.media ?? { audio: true, video: true });
      } catch (error) {
        return this.#fail(StreamError.of(error, this.name, 'media_failed'));
      }
      if (this.#isLeft()) {
        releaseMedia(media);
        return;
      }
      this.#media = media;
      this.#emitter.emit('local', media.stream);
    }
    await this.#enter(grant);
  }

  /** Sends the present or watch on the first ready socket. */
  async #enter(grant: string): Promise<void> {
    for (;;) {
      try {
        await this.#link.whenReady();
      } catch (error) {
        return this.#fail(StreamError.of(error, this.name, 'closed'));
      }
      if (this.#isLeft()) return;
      const ref = this.#link.nextRef();
      this.#link.claim(ref, this.#party);
      const t = this.#role === 'presenter' ? 'stream.present' : 'stream.watch';
      if (this.#link.send({ t, ref, stream: this.name, grant })) {
        this.#ref = ref;
        this.#session = this.#link.session;
        return;
      }
      // The socket went between the welcome and now: it goes on the next one.
      this.#link.release(ref, this.#party);
    }
  }

  #entered(frame: StreamPresentingFrame | StreamWatchingFrame): void {
    if (frame.ref !== this.#ref || this.#state === 'left') return;
    this.#forgetRef();
    this.#on = true;
    this.#ice = Array.isArray(frame.ice) ? frame.ice : [];
    if (frame.t === 'stream.presenting') {
      this.#move('connecting');
      this.#newPeer(this.#media?.stream ?? new MediaStream(), true)?.offer();
    } else if (frame.live === true) {
      // The unit's offer follows.
      this.#move('connecting');
      this.#wentLive(typeof frame.started_at === 'number' ? frame.started_at : undefined);
    } else {
      this.#move('waiting');
    }
  }

  #wentLive(startedAt: number | undefined): void {
    if (this.#state === 'left' || !this.#on) return;
    this.#live = true;
    this.#startedAt = startedAt;
    this.#restarts = 0;
    if (this.#role === 'presenter') this.#move('live');
    else if (this.#state === 'waiting') this.#move('connecting');
    this.#emitter.emit('live', { startedAt });
  }

  #runEnded(): void {
    if (this.#state === 'left' || !this.#on) return;
    const was = this.#live;
    this.#live = false;
    this.#startedAt = undefined;
    this.#closePeer();
    if (this.#role === 'presenter') {
      // The service ended the run under this presenter (its media failed at the unit, or never
      // connected): it stays on the stream and offers again, a few times in a row.
      if (was) this.#emitter.emit('ended');
      if (this.#restarts >= MAX_RESTARTS) {
        const message = `the presenter's media failed at the forwarding unit ${this.#restarts + 1} times in a row`;
        this.#fail(new StreamError('peer_failed', message, { stream: this.name }));
        return;
      }
      this.#restarts++;
      this.#move('connecting');
      this.#newPeer(this.#media?.stream ?? new MediaStream(), true)?.offer();
      return;
    }
    this.#move('waiting');
    if (was) this.#emitter.emit('ended');
  }

  #signal(data: Record<string, unknown>): void {
    if (this.#state === 'left' || !this.#on) return;
    if (this.#role === 'viewer' && isOffer(data.sdp)) {
      // Each offer is the unit's new session (a new run, or a restart): a new connection and stream.
      this.#remote = new MediaStream();
      for (const element of this.#shown) element.srcObject = this.#remote;
      this.#newPeer(new MediaStream(), false);
      // The unit's new session has nothing of what this page asked of the video.
      this.#video.resend();
      this.#move('connecting');
      // The unit offers only while live: its `stream.live` raced this page's watch (it came before the answer).
      if (!this.#live) this.#wentLive(undefined);
    }
    this.#rtc?.receive(data);
  }

  /** A viewer's video wants go to the unit while it has a session for the page (its next offer sends them again). */
  #sendVideo(wants: VideoWantsData): boolean {
    if (this.#role !== 'viewer' || !this.#rtc || !this.#on || this.#session !== this.#link.session) return false;
    return this.#link.send({ t: 'stream.signal', stream: this.name, data: { video: wants } });
  }

  /** A new connection to the unit, replacing the last; undefined when WebRTC refused (the page has left then). */
  #newPeer(local: MediaStream, sendOnly: boolean): Peer | undefined {
    this.#closePeer();
    let rtc: Peer;
    try {
      rtc = new Peer(
        this.#ice,
        this.#link.rtc,
        local,
        {
          signal: (data) => {
            if (this.#rtc === rtc && this.#on && this.#session === this.#link.session) {
              this.#link.send({ t: 'stream.signal', stream: this.name, data });
            }
          },
          track: (track) => {
            const remote = this.#remote;
            if (this.#rtc !== rtc || !remote) return;
            if (!remote.getTrackById(track.id)) remote.addTrack(track);
            this.#emitter.emit('remote', track, remote);
          },
          connected: () => {
            if (this.#rtc !== rtc) return;
            this.#clearConnectTimer();
            this.#restarts = 0;
            if (this.#role === 'viewer') this.#move('live');
          },
          failed: (error) => {
            if (this.#rtc === rtc) this.#mediaFailed(StreamError.of(error, this.name, 'peer_failed'));
          },
        },
        { sendOnly },
      );
    } catch (cause) {
      this.#fail(new StreamError('peer_failed', 'could not make the WebRTC connection', { stream: this.name, cause }));
      return undefined;
    }
    this.#rtc = rtc;
    const ms = this.#link.rtc.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#connectTimer = setTimeout(() => {
      if (this.#rtc !== rtc) return;
      const error = new StreamError('peer_failed', `the media did not connect within ${ms} ms`, { stream: this.name });
      this.#mediaFailed(error);
    }, ms);
    return rtc;
  }

  /**
   * The page's media connection failed: a viewer asks the unit for a fresh offer; a presenter
   * leaves, which ends the run.
   */
  #mediaFailed(error: StreamError): void {
    if (this.#role === 'presenter' || this.#restarts >= MAX_RESTARTS) {
      this.#fail(error);
      return;
    }
    this.#closePeer();
    if (!this.#live) {
      this.#move('waiting');
      return;
    }
    this.#restarts++;
    this.#move('connecting');
    if (this.#session === this.#link.session) {
      this.#link.send({ t: 'stream.signal', stream: this.name, data: { restart: true } });
    }
  }

  #refused(error: RealtimeSocketError): void {
    if (this.#state === 'left') {
      // The refusal of a frame this page sent before leaving (its leave, a last candidate): it is off.
      this.#over();
      return;
    }
    // A refused present or watch left the page off the stream: nothing to leave.
    if (this.#ref !== undefined) this.#session = undefined;
    this.#fail(StreamError.of(error, this.name, 'peer_failed'));
  }

  #welcome(): void {
    if (!this.#rejoin || this.#state === 'left') return;
    this.#rejoin = false;
    void this.#again();
  }

  async #again(): Promise<void> {
    let grant: string;
    try {
      grant = await grantText(this.#options.grant, this.name);
    } catch (error) {
      return this.#fail(StreamError.of(error, this.name, 'token_failed'));
    }
    if (this.#state !== 'left') await this.#enter(grant);
  }

  #lost(error: RealtimeSocketError, final: boolean): void {
    if (this.#state === 'left') {
      this.#over();
      return;
    }
    this.#closePeer();
    this.#forgetRef();
    // The service took the page off with its socket; it goes back on with the next.
    this.#rejoin = this.#session !== undefined;
    this.#session = undefined;
    this.#on = false;
    this.#live = false;
    this.#startedAt = undefined;
    if (final) this.#fail(StreamError.of(error, this.name, 'closed'));
    else this.#move('joining');
  }

  /** Off the stream by an error: tells the service when the page is on it, and settles `left` with the error. */
  #fail(error: StreamError): void {
    if (this.#state === 'left') return;
    const sent = this.#sendLeave();
    this.#teardown();
    this.#settleWith({ error });
    if (sent) this.#awaitWord();
    else this.#over();
  }

  #sendLeave(): boolean {
    if (this.#session === undefined || this.#session !== this.#link.session) return false;
    const ref = this.#link.nextRef();
    this.#link.claim(ref, this.#party);
    if (!this.#link.send({ t: 'stream.leave', ref, stream: this.name })) {
      this.#link.release(ref, this.#party);
      return false;
    }
    this.#leaveRef = ref;
    return true;
  }

  /** Keeps hearing the stream's frames until the service's `stream.left`, for a while. */
  #awaitWord(): void {
    this.#confirmTimer ??= setTimeout(() => this.#over(), LEAVE_CONFIRM_MS);
  }

  /** The end: settled (if not yet) and no longer routed. */
  #over(): void {
    this.#settleWith({});
    this.#forgetRef();
    if (this.#leaveRef !== undefined) this.#link.release(this.#leaveRef, this.#party);
    this.#leaveRef = undefined;
    this.#link.live(this.name, this.#party, false);
    if (this.#confirmTimer !== undefined) clearTimeout(this.#confirmTimer);
    this.#confirmTimer = undefined;
  }

  #settleWith(leave: StreamLeave): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle(leave);
    this.#emitter.emit('left', leave);
  }

  #forgetRef(): void {
    if (this.#ref !== undefined) this.#link.release(this.#ref, this.#party);
    this.#ref = undefined;
  }

  /** Stops media and the connection; state `left`. */
  #teardown(): void {
    if (this.#state === 'left') return;
    this.#closePeer();
    releaseMedia(this.#media);
    this.#video.close();
    this.#shown.clear();
    this.#on = false;
    this.#live = false;
    this.#move('left');
  }

  /** Left: read after an await, where the state may have changed behind it. */
  #isLeft(): boolean {
    return this.#state === 'left';
  }

  #closePeer(): void {
    this.#clearConnectTimer();
    this.#rtc?.close();
    this.#rtc = undefined;
  }

  #clearConnectTimer(): void {
    if (this.#connectTimer !== undefined) clearTimeout(this.#connectTimer);
    this.#connectTimer = undefined;
  }

  #move(state: StreamState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#emitter.emit('state', state, previous);
  }
}

function isOffer(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'offer';
}
