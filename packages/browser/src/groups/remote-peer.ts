import type { IceServer, GroupPeer as PeerInfo, VideoWantsData } from '@realtime/protocol';
import { AdaptiveVideo } from '../calls/adaptive-video.js';
import { Peer } from '../calls/peer.js';
import type { CallMediaKind, RtcOptions } from '../calls/types.js';
import { GroupError } from './errors.js';
import type { GroupPeer, GroupPeerState } from './types.js';

export const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;
/**
 * In unit mode, the media from a peer's unit that fails asks that unit for a fresh offer this many
 * times in a row (as a live stream's viewer does); then the peer stays `failed` until its unit offers.
 */
export const PEER_RESTARTS = 3;

/** What a peer page's connection tells its group. */
export interface RemotePeerHooks {
  /** A description, candidate or restart for that page, as `group.signal` data with `to` the page. */
  signal(data: Record<string, unknown>): void;
  track(peer: RemotePeer, track: MediaStreamTrack): void;
  state(peer: RemotePeer, state: GroupPeerState, previous: GroupPeerState): void;
}

/** How the group's connections are made: the service's ICE servers and the page's `rtc` options. */
export interface PeerNet {
  readonly ice: readonly IceServer[];
  readonly rtc: RtcOptions;
}

/**
 * The media of one other page of a group call, in either mode:
 * - **mesh**: a {@link Peer} of the calls with that page itself (the same offer, answer and
 *   trickled candidates, carried as `group.signal`); the page that joined later offers.
 * - **unit**: a receive-only connection answering the offers of that page's forwarding unit. Each
 *   offer replaces the last connection (the page offered its media anew, or its unit restarted),
 *   while this object and its `stream` stay: the app's tile for the page does not change.
 */
export class RemotePeer implements GroupPeer {
  readonly page: string;
  readonly user: string;
  readonly media: readonly CallMediaKind[];
  readonly stream = new MediaStream();
  readonly #group: string;
  readonly #hooks: RemotePeerHooks;
  readonly #net: PeerNet;
  #state: GroupPeerState = 'connecting';
  #error: GroupError | undefined;
  #rtc: Peer | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The media comes from the page's forwarding unit. */
  #unit = false;
  /** Fresh offers asked of the page's unit since its media last connected. */
  #restarts = 0;
  /** What this page asks of the peer's video at its unit (adaptive stream). */
  readonly #video = new AdaptiveVideo((wants) => this.#sendVideo(wants));

  constructor(info: PeerInfo, group: string, net: PeerNet, hooks: RemotePeerHooks) {
    this.page = info.page;
    this.user = info.user;
    this.media = Array.isArray(info.media) ? [...info.media] : ['audio'];
    this.#group = group;
    this.#net = net;
    this.#hooks = hooks;
  }

  get state(): GroupPeerState {
    return this.#state;
  }

  get error(): GroupError | undefined {
    return this.#error;
  }

  get peerConnection(): RTCPeerConnection | undefined {
    return this.#rtc?.connection;
  }

  /** Mesh: makes the connection with this page's tracks; `offer` on the page that joined later. */
  connect(local: MediaStream, offer: boolean): void {
    const rtc = this.#open(local);
    if (rtc && offer) rtc.offer();
  }

  /**
   * Unit mode from now on: the page-to-page connection (if any) closes and its tracks leave
   * `stream`; the peer is `connecting` until its unit's offer comes.
   */
  viaUnit(): void {
    if (this.#state === 'left') return;
    this.#unit = true;
    this.#restarts = 0;
    this.#drop();
    this.#error = undefined;
    this.#move('connecting');
  }

  /** A `group.signal` from this page (mesh), or from its unit (unit mode). */
  receive(data: Record<string, unknown>): void {
    if (this.#state === 'left') return;
    if (this.#unit && isOffer(data.sdp)) {
      // A new session of the unit: it replaces the last connection, whatever became of it.
      this.#drop();
      this.#error = undefined;
      this.#move('connecting');
      // Receive-only: no local tracks, the answer takes what the unit sends.
      this.#open(new MediaStream());
      // The new session has nothing of what this page asked of the video.
      this.#video.resend();
    }
    if (this.#state === 'connecting' || this.#state === 'connected') this.#rtc?.receive(data);
  }

  /**
   * The page's unit could not open a session for this page (`unavailable`: no media port free on
   * its node, or a bound of its app): `failed` with that error, and no fresh offer is asked for (it
   * would be refused the same). The unit's next offer brings the peer back.
   */
  refused(error: GroupError): void {
    if (this.#state === 'left') return;
    this.#drop();
    this.#error = error;
    this.#move('failed');
  }

  /** The peer left, or this page did: the connection closes and the stream's tracks end. */
  close(): void {
    if (this.#state === 'left') return;
    this.#stop();
    this.#video.close();
    this.#move('left');
  }

  setVideoSize(width?: number, height?: number): void {
    this.#video.setSize(width, height);
  }

  pauseVideo(): void {
    this.#video.pause();
  }

  resumeVideo(): void {
    this.#video.resume();
  }

  attach(element: HTMLMediaElement): () => void {
    if (this.#state === 'left') return () => {};
    if (element.srcObject !== this.stream) element.srcObject = this.stream;
    const stop = this.#video.attach(element);
    return () => {
      stop();
      if (element.srcObject === this.stream) element.srcObject = null;
    };
  }

  /** Video wants go to the peer's unit while a session of it is up (its next offer sends them again). */
  #sendVideo(wants: VideoWantsData): boolean {
    if (!this.#unit || this.#rtc === undefined || (this.#state !== 'connecting' && this.#state !== 'connected')) {
      return false;
    }
    this.#hooks.signal({ video: wants });
    return true;
  }

  /** A new connection, replacing none (mesh) or the last (unit); undefined when WebRTC refused. */
  #open(local: MediaStream): Peer | undefined {
    let rtc: Peer;
    try {
      rtc = new Peer(this.#net.ice, this.#net.rtc, local, {
        signal: (data) => {
          if (this.#rtc === rtc) this.#hooks.signal(data);
        },
        track: (track) => {
          if (this.#rtc !== rtc) return;
          if (!this.stream.getTrackById(track.id)) this.stream.addTrack(track);
          this.#hooks.track(this, track);
        },
        connected: () => {
          if (this.#rtc !== rtc) return;
          this.#clearTimer();
          this.#restarts = 0;
          this.#move('connected');
        },
        failed: (error) => {
          if (this.#rtc === rtc) this.#fail(GroupError.of(error, this.#group));
        },
      });
    } catch (cause) {
      this.#fail(new GroupError('peer_failed', 'could not make the WebRTC connection', { group: this.#group, cause }));
      return undefined;
    }
    this.#rtc = rtc;
    const ms = this.#net.rtc.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#timer = setTimeout(() => {
      if (this.#rtc !== rtc) return;
      const error = `the media with page ${this.page} did not connect within ${ms} ms`;
      this.#fail(new GroupError('peer_failed', error, { group: this.#group }));
    }, ms);
    return rtc;
  }

  #fail(error: GroupError): void {
    if (this.#state !== 'connecting' && this.#state !== 'connected') return;
    this.#error = error;
    this.#stop();
    this.#move('failed');
    // The unit can offer again; a page-to-page connection cannot (the mesh has no restart).
    if (this.#unit && this.#restarts < PEER_RESTARTS) {
      this.#restarts++;
      this.#hooks.signal({ restart: true });
    }
  }

  /** Closes the connection and takes its tracks out of `stream` (the stream stays the app's). */
  #drop(): void {
    this.#stop();
    this.#rtc = undefined;
    for (const track of this.stream.getTracks()) this.stream.removeTrack(track);
  }

  #stop(): void {
    this.#clearTimer();
    this.#rtc?.close();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #move(state: GroupPeerState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#hooks.state(this, state, previous);
  }
}

export function isOffer(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'offer';
}
