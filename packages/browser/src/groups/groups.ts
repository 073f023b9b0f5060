import { type ErrorFrame, type GroupClientFrame, type GroupServerFrame, roomNameProblem } from '@realtime/protocol';
import { webRtcHere } from '../calls/media.js';
import { checkTokenAndMedia } from '../calls/token.js';
import type { RtcOptions } from '../calls/types.js';
import type { RealtimeSocketError } from '../errors.js';
import { Group } from './group.js';
import type { GroupLink, GroupParty } from './link.js';
import type { GroupOptions } from './types.js';

/** How many ended refs are remembered, to drop late answers and refusals of them. */
const DONE_KEPT = 100;

/** What the groups module needs from the client. */
export interface GroupsHost {
  readonly rtc: RtcOptions;
  /** The page's user, from the last welcome. */
  readonly user: string | null | undefined;
  readonly session: number;
  send(frame: GroupClientFrame): boolean;
  /** Resolves at the next welcome (at once when ready); rejects when the client closes. */
  whenReady(): Promise<void>;
  /** A ref shared with the calls (counted down), so a refusal finds its frame. */
  nextRef(): number;
}

/** A handler for each group frame the service sends. */
export type GroupFrameHandlers = {
  [T in GroupServerFrame['t']]: (frame: Extract<GroupServerFrame, { t: T }>) => void;
};

/**
 * The client's group calls: joins them, routes the service's group frames by `ref` and group name,
 * and takes the page out of them when it goes away or the socket is lost.
 *
 * A lost socket ends the page's group calls (`failed`, error `disconnected`): the service takes a
 * page out of its group calls when its socket goes, and a new socket is a new page. A group call
 * still waiting to join (getting its media or token, or waiting for the connection) waits for the
 * next socket instead.
 */
export class Groups {
  readonly #link: GroupLink;
  readonly #routes = new Map<number | string, GroupParty>();
  readonly #live = new Set<GroupParty>();
  /** The page's group calls, by name, until each is over. */
  readonly #groups = new Map<string, Group>();
  /** Refs of joins and leaves already settled here: their late refusals are not `$error`s. */
  readonly #done = new Set<number>();
  readonly #pageHide = (): void => this.leave();

  constructor(host: GroupsHost) {
    this.#link = {
      rtc: host.rtc,
      get user() {
        return host.user;
      },
      get session() {
        return host.session;
      },
      whenReady: () => host.whenReady(),
      send: (frame) => host.send(frame),
      nextRef: () => host.nextRef(),
      claim: (key, party) => {
        this.#routes.set(key, party);
      },
      release: (key, party) => {
        if (this.#routes.get(key) !== party) return;
        this.#routes.delete(key);
        if (typeof key !== 'number') return;
        this.#done.add(key);
        if (this.#done.size > DONE_KEPT) this.#done.delete(this.#done.values().next().value as number);
      },
      live: (party, on) => {
        if (on) this.#live.add(party);
        else this.#live.delete(party);
      },
    };
    // The others hear this page leave, rather than a socket that dropped.
    globalThis.addEventListener?.('pagehide', this.#pageHide);
  }

  /** Joins `name`, or gives the page's group call of that name while it is not left. */
  open(name: string, options: GroupOptions): Group {
    const problem = typeof name === 'string' ? roomNameProblem(name) : 'a group name is a string';
    if (problem) throw new TypeError(problem.replace('room name', 'group name'));
    checkTokenAndMedia(options, 'group');
    if (!webRtcHere())
      throw new TypeError('group calls need WebRTC (RTCPeerConnection and MediaStream), not found here');
    const existing = this.#groups.get(name);
    if (existing && existing.state !== 'left') return existing;
    const group = new Group(name, { token: options.token, media: options.media ?? { audio: true } }, this.#link);
    this.#groups.set(name, group);
    void group.ended.then(() => {
      if (this.#groups.get(name) === group) this.#groups.delete(name);
    });
    return group;
  }

  frameHandlers(): GroupFrameHandlers {
    const byRef = (ref: unknown) => (typeof ref === 'number' ? this.#routes.get(ref) : undefined);
    const byName = (group: unknown) => (typeof group === 'string' ? this.#routes.get(group) : undefined);
    return {
      'group.joined': (frame) => byRef(frame.ref)?.joined(frame),
      'group.left': (frame) => byRef(frame.ref)?.left(),
      'group.peer-joined': (frame) => {
        if (typeof frame.page === 'string' && typeof frame.user === 'string') byName(frame.group)?.peerJoined(frame);
      },
      'group.peer-left': (frame) => {
        if (typeof frame.page === 'string') byName(frame.group)?.peerLeft(frame);
      },
      'group.mode': (frame) => byName(frame.group)?.mode(frame),
      'group.signal': (frame) => byName(frame.group)?.signal(frame),
    };
  }

  /** Takes an error frame that refused a group frame: a join or leave by its ref, or a signal. */
  ownsError(frame: ErrorFrame, error: RealtimeSocketError): boolean {
    if (typeof frame.ref === 'number') {
      const party = this.#routes.get(frame.ref);
      if (party) {
        party.refused(error, frame.ref);
        return true;
      }
      return this.#done.has(frame.ref);
    }
    // A refused signal (no ref) names its group: that group says whether it is a race it ends itself.
    const party = typeof frame.group === 'string' ? this.#routes.get(frame.group) : undefined;
    const from = (frame as { from?: unknown }).from;
    if (party) return party.signalRefused(error, typeof from === 'string' ? from : undefined);
    // A signal (no ref) to a page that left as it was sent: the race ends with `peer-left`, not an error.
    return frame.code === 'not_in_group' && (this.#live.size > 0 || this.#done.size > 0);
  }

  lost(error: RealtimeSocketError, final: boolean): void {
    if (final) globalThis.removeEventListener?.('pagehide', this.#pageHide);
    for (const party of [...this.#live]) party.lost(error, final);
  }

  /** Leaves every group call. */
  leave(): void {
    for (const party of [...this.#live]) party.leave();
  }
}
