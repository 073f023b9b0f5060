import type { IceServer, GroupPeer as PeerInfo } from '@realtime/protocol';
import { Peer } from '../calls/peer.js';
import type { CallMediaKind, RtcOptions } from '../calls/types.js';
import { GroupError } from './errors.js';
import type { GroupPeer, GroupPeerState } from './types.js';

const DEFAULT_CONNECT_TIMEOUT_MS = 20_000;

/** What a peer page's connection tells its group. */
export interface MeshPeerHooks {
  /** A description or candidate for that page, as `group.signal` data. */
  signal(data: Record<string, unknown>): void;
  track(peer: MeshPeer, track: MediaStreamTrack): void;
  state(peer: MeshPeer, state: GroupPeerState, previous: GroupPeerState): void;
}

/**
 * The media with one other page of a group call: a {@link Peer} of the calls, the same offer,
 * answer and trickled candidates, carried as `group.signal`. The page that joined later offers.
 */
export class MeshPeer implements GroupPeer {
  readonly page: string;
  readonly user: string;
  readonly media: readonly CallMediaKind[];
  readonly stream = new MediaStream();
  readonly #group: string;
  readonly #hooks: MeshPeerHooks;
  #state: GroupPeerState = 'connecting';
  #error: GroupError | undefined;
  #rtc: Peer | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(info: PeerInfo, group: string, hooks: MeshPeerHooks) {
    this.page = info.page;
    this.user = info.user;
    this.media = Array.isArray(info.media) ? [...info.media] : ['audio'];
    this.#group = group;
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

  /** Makes the connection with this page's tracks; `offer` on the page that joined later. */
  connect(ice: readonly IceServer[], rtc: RtcOptions, local: MediaStream, offer: boolean): void {
    try {
      this.#rtc = new Peer(ice, rtc, local, {
        signal: (data) => this.#hooks.signal(data),
        track: (track) => {
          if (!this.stream.getTrackById(track.id)) this.stream.addTrack(track);
          this.#hooks.track(this, track);
        },
        connected: () => {
          this.#clearTimer();
          this.#move('connected');
        },
        failed: (error) => this.#fail(GroupError.of(error, this.#group)),
      });
    } catch (cause) {
      this.#fail(new GroupError('peer_failed', 'could not make the WebRTC connection', { group: this.#group, cause }));
      return;
    }
    const ms = rtc.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.#timer = setTimeout(() => {
      const error = `the media with page ${this.page} did not connect within ${ms} ms`;
      this.#fail(new GroupError('peer_failed', error, { group: this.#group }));
    }, ms);
    if (offer) this.#rtc.offer();
  }

  /** A `group.signal` of this page. */
  receive(data: Record<string, unknown>): void {
    if (this.#state === 'connecting' || this.#state === 'connected') this.#rtc?.receive(data);
  }

  /** The peer left, or this page did: the connection closes and the stream's tracks end. */
  close(): void {
    if (this.#state === 'left') return;
    this.#stop();
    this.#move('left');
  }

  #fail(error: GroupError): void {
    if (this.#state !== 'connecting' && this.#state !== 'connected') return;
    this.#error = error;
    this.#stop();
    this.#move('failed');
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
