import type { GroupMode } from '@realtime/protocol';
import type { CallMediaKind, CallMediaSource } from '../calls/types.js';
import type { TokenSource } from '../room.js';
import type { GroupError } from './errors.js';

/**
 * How a group call's media flows ({@link Group.mode}): `mesh`, page to page (a small group), or
 * `unit`, each page sending once to a forwarding unit of the service, which sends it on to the others.
 */
export type { GroupMode };

/**
 * Where a {@link Group} is:
 * - `joining`: the page is getting its media and token, or waits for the service to take it in;
 * - `joined`: in the group call; media flows with each peer page as its connection comes up;
 * - `left`: out of it (see {@link GroupEnd} for why).
 */
export type GroupState = 'joining' | 'joined' | 'left';

/**
 * Why a page is out of a group call: `left` (it left: `leave()`, `pagehide`, `client.close()`),
 * or `failed` with `error` (the service refused the join, the media or token could not be had,
 * the socket was lost).
 */
export type GroupEndReason = 'left' | 'failed';

/**
 * How a page's group call ended, given by {@link Group.ended} and the `ended` event.
 *
 * @example
 * const { reason, error } = await group.ended;
 * if (error?.code === 'group_full') toast('The call is full');
 */
export interface GroupEnd {
  reason: GroupEndReason;
  /** Set when `reason` is `failed`. */
  error?: GroupError;
}

/**
 * Where the media with one other page of the group is: `connecting`, `connected`, `failed`
 * (ICE failed, or no media within `rtc.connectTimeoutMs`: {@link GroupPeer.error} says why), or
 * `left` (the peer left, or this page did). In unit mode a failed peer asks its unit for a fresh
 * offer, and goes back to `connecting` when it comes; a mesh's `failed` is final.
 */
export type GroupPeerState = 'connecting' | 'connected' | 'failed' | 'left';

/**
 * Another page in the group call, as a {@link Group} gives it: one per page (a user with two pages
 * in the group is two peers).
 */
export interface GroupPeer {
  /** The page's id in the group. */
  readonly page: string;
  /** The page's user. */
  readonly user: string;
  /** What the page's call token allows it to send: `['audio']` or `['audio', 'video']`. */
  readonly media: readonly CallMediaKind[];
  /**
   * The page's media: a stream that receives its tracks as they arrive (give it to a `<video>` at
   * once). The same stream for as long as the peer is there: when the media reconnects (the group
   * switched to unit mode, or the peer's unit offered anew) its old tracks leave it and the new come.
   */
  readonly stream: MediaStream;
  readonly state: GroupPeerState;
  /** Why the media with this page failed, when {@link GroupPeer.state} is `failed`. */
  readonly error: GroupError | undefined;
  /**
   * The WebRTC connection with this page in a mesh (for `getStats`, or `replaceTrack`), or, in unit
   * mode, the receive-only one from the page's forwarding unit (new with each of its offers; undefined
   * until the first). Closed once the peer left or failed.
   */
  readonly peerConnection: RTCPeerConnection | undefined;
  /**
   * Adaptive stream, unit mode: the largest size this page shows the peer's video at (device
   * pixels: CSS px times `devicePixelRatio`), so its unit sends no larger layer; no argument lifts
   * the bound. Kept and sent again to each new session of the peer's unit. In a mesh it does nothing
   * (the peer sends its one encoding straight to this page) until the group switches to units.
   * Throws a RangeError for a size that is not a positive number.
   */
  setVideoSize(width?: number, height?: number): void;
  /** Unit mode: no video from the peer's unit until {@link GroupPeer.resumeVideo} (its audio goes on). */
  pauseVideo(): void;
  resumeVideo(): void;
  /**
   * Shows the peer's media in `element` (its `srcObject`, {@link GroupPeer.stream}) and, in unit mode,
   * fits the video to it: the element's size times `devicePixelRatio`, watched as it changes (told
   * once it settles, ~150 ms), and paused while it is off screen, zero-sized or the tab is hidden.
   * Returns a function that stops (and clears `srcObject` if it is still the peer's).
   *
   * @example
   * group.on('peer-joined', (peer) => { const stop = peer.attach(tileVideo(peer.page)); group.on('peer-left', (p) => p === peer && stop()); });
   */
  attach(element: HTMLMediaElement): () => void;
}

/**
 * Options of `client.group`.
 *
 * @example
 * client.group('standup', { token: () => fetch('/rt/group-token?group=standup').then((r) => r.text()), media: { audio: true, video: true } });
 */
export interface GroupOptions {
  /** A call token for this page's user with `group` (`callToken(user, { group })` of `@realtime/node`), or a function giving one. */
  token: TokenSource;
  /** What to send; default `{ audio: true }`, got with `getUserMedia`. */
  media?: CallMediaSource | undefined;
}

/** A page of the group call speaking now (this page included), in a {@link GroupSpeakers}. */
export interface GroupSpeaker {
  /** The page's id in the group: a peer's `page`, or {@link Group.page} for this page. */
  readonly page: string;
  /** The page's user. */
  readonly user: string;
  /** Its audio level, smoothed over about 1.5 s: 0 (silence) to 1 (full scale), linear. */
  readonly level: number;
}

/**
 * Who speaks in the group call, loudest first, given by the `speakers` event when that list or its
 * order changes (and by {@link Group.speakers} at any time). Empty when nobody speaks.
 *
 * @example
 * group.on('speakers', ({ speakers }) => highlight(speakers[0]?.page));
 */
export interface GroupSpeakers {
  readonly speakers: readonly GroupSpeaker[];
}
