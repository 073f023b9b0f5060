import type {
  GroupJoinedFrame,
  GroupMode,
  GroupModeFrame,
  GroupPeer as GroupPeerInfo,
  GroupPeerJoinedFrame,
  GroupPeerLeftFrame,
  GroupSignalInFrame,
  IceServer,
} from '@realtime/protocol';
import { CONFIRM_MS } from '../calls/call.js';
import { type LocalMedia, localMedia, releaseMedia } from '../calls/media.js';
import { tokenText } from '../calls/token.js';
import type { CallMediaSource } from '../calls/types.js';
import { systemClock } from '../connection/clock.js';
import { type AnyListener, Emitter } from '../emitter.js';
import type { RealtimeSocketError } from '../errors.js';
import type { TokenSource } from '../room.js';
import { GroupError } from './errors.js';
import type { GroupLink, GroupParty } from './link.js';
import { type PeerNet, RemotePeer } from './remote-peer.js';
import { type SpeakerSource, SpeakerWatch } from './speaker-watch.js';
import type { SpeakerLevel } from './speakers.js';
import type { GroupEnd, GroupPeer, GroupPeerState, GroupSpeaker, GroupSpeakers, GroupState } from './types.js';
import { UnitUplink } from './unit-uplink.js';

/** Signals kept for a page not yet heard of (its `group.peer-joined` still on the way), per page and pages. */
const EARLY_SIGNALS = 64;
const EARLY_PAGES = 16;

type GroupFrame = GroupPeerJoinedFrame | GroupPeerLeftFrame | GroupModeFrame | GroupSignalInFrame;

/**
 * Listeners of a {@link Group}, by event name.
 *
 * @example
 * group.on('peer-joined', (peer) => addTile(peer.page, peer.user, peer.stream));
 * group.on('peer-left', (peer) => removeTile(peer.page));
 * group.on('mode', (mode) => (badge.textContent = mode)); // 'unit': through the service from now on
 * group.on('speakers', ({ speakers }) => highlight(speakers.map((s) => s.page))); // loudest first
 * group.on('ended', ({ reason, error }) => showEnded(reason, error?.code));
 */
export interface GroupEvents {
  /** The group call moved to another {@link GroupState}. */
  state: (state: GroupState, previous: GroupState) => void;
  /**
   * The group call switched to another {@link GroupMode} while this page was in it (it grew to the
   * service's unit size): the peers stay, each `peer.stream` too; their media reconnects through
   * the service (`peer-state` goes `connecting`, then `connected`). A page that joins a group
   * already in unit mode hears no `mode`: {@link Group.mode} says `unit` from its `joined` state on.
   */
  mode: (mode: GroupMode) => void;
  /** This page's media is here ({@link Group.localStream}): for a preview, before the join is even sent. */
  local: (stream: MediaStream) => void;
  /**
   * Another page is in the group: each page there when this one joined, then each newcomer.
   * `peer.stream` receives its tracks as they arrive.
   */
  'peer-joined': (peer: GroupPeer) => void;
  /** A track of a peer arrived; `peer.stream` now holds it. */
  remote: (peer: GroupPeer, track: MediaStreamTrack) => void;
  /** The media with a peer connected, failed or ended. */
  'peer-state': (peer: GroupPeer, state: GroupPeerState, previous: GroupPeerState) => void;
  /** A peer left the group call (it left, closed, or its node died): its media has stopped. */
  'peer-left': (peer: GroupPeer) => void;
  /**
   * Who speaks changed, or their order: the pages speaking now, loudest first (this page too), as
   * {@link Group.speakers} gives them. Levels are read five times a second (from the first
   * `speakers` listener on) and smoothed over about 1.5 s; an empty list when the last speaker fell silent.
   */
  speakers: (change: GroupSpeakers) => void;
  /** This page is out of the group call, and why (as {@link Group.ended} gives it). */
  ended: (end: GroupEnd) => void;
}

/**
 * This page in a group call, from `client.group`. A group starts as a mesh, where the page sends
 * its media to each other page and gets theirs: the page that joins offers to each page already
 * there and answers the offers of those who join after it; candidates trickle through the service.
 * From the service's unit size on (5 pages unless configured) the group goes through forwarding
 * units until it empties ({@link Group.mode} `unit`): the page sends its media once, to the unit
 * the service runs for it ({@link Group.uplink}), and receives each other page's media from that
 * page's unit. The switch keeps the peers and their streams: only the connections change.
 *
 * Leaving stops the page's media and connections at once (state `left`); `ended` settles with
 * `left` once the service confirmed it. A group call that ends by an error has reason `failed` and
 * the error in `error`; `ended` never rejects. The SDK stops the tracks it got with `getUserMedia`
 * when the page leaves; a `MediaStream` the page passed in stays the page's.
 *
 * @example
 * const group = client.group('standup', { token: () => fetchGroupToken('standup'), media: { audio: true, video: true } });
 * group.on('local', (stream) => (preview.srcObject = stream));
 * group.on('peer-joined', (peer) => addTile(peer.page, peer.stream));
 * group.on('peer-left', (peer) => removeTile(peer.page));
 * leaveButton.onclick = () => group.leave();
 *
 * @example
 * // What the page sends to its unit, in unit mode.
 * const stats = await group.uplink?.getStats();
 */
export class Group {
  /** The group call's name (the call token's `group`, the webhook's `call`). */
  readonly name: string;
  /** Settles once, when this page is out of the group call, with why; never rejects. */
  readonly ended: Promise<GroupEnd>;

  readonly #link: GroupLink;
  readonly #emitter = new Emitter();
  readonly #party: GroupParty;
  readonly #peers = new Map<string, RemotePeer>();
  #state: GroupState = 'joining';
  #mode: GroupMode = 'mesh';
  /** In unit mode, the page's media to its own unit. */
  #uplink: UnitUplink | undefined;
  #settle: (end: GroupEnd) => void = () => {};
  #settled = false;
  #page: string | undefined;
  #ice: readonly IceServer[] = [];
  #media: LocalMedia | undefined;
  /** The ref of the join the service has not answered yet. */
  #joinRef: number | undefined;
  #leaveRef: number | undefined;
  /** The socket the join went on: another socket's page is not in the group. */
  #session: number | undefined;
  /** The group's frames that came before the answer to the join (its ICE servers with it). */
  #queued: GroupFrame[] = [];
  /** Signals of pages not yet heard of, by page. */
  #early = new Map<string, Record<string, unknown>[]>();
  /** Pages that left: their late signals are dropped. */
  #gone = new Set<string>();
  #confirmTimer: ReturnType<typeof setTimeout> | undefined;
  /** Reads the audio levels while the page is in the group. */
  #watch: SpeakerWatch | undefined;
  /** The page asked who speaks (a `speakers` listener, or {@link Group.speakers} read): levels are read once joined. */
  #wantsSpeakers = false;

  /** Use `client.group`. */
  constructor(name: string, options: { token: TokenSource; media: CallMediaSource }, link: GroupLink) {
    this.name = name;
    this.#link = link;
    this.ended = new Promise<GroupEnd>((resolve) => {
      this.#settle = resolve;
    });
    this.#party = {
      joined: (frame) => this.#joined(frame),
      left: () => this.#over({ reason: 'left' }),
      peerJoined: (frame) => this.#frame(frame),
      peerLeft: (frame) => this.#frame(frame),
      mode: (frame) => this.#frame(frame),
      signal: (frame) => this.#frame(frame),
      signalRefused: (error, from) => this.#signalRefused(error, from),
      refused: (error, ref) => this.#refused(error, ref),
      lost: (error, final) => this.#lost(error, final),
      leave: () => void this.leave(),
    };
    link.claim(name, this.#party);
    link.live(this.#party, true);
    void this.#join(options.token, options.media);
  }

  get state(): GroupState {
    return this.#state;
  }

  /** This page's id in the group (what the other pages know it by), once joined. */
  get page(): string | undefined {
    return this.#page;
  }

  /**
   * How the media flows: `mesh` (page to page) or `unit` (through the service's forwarding units).
   * Set when the page has joined (state `joined`); the `mode` event tells a switch.
   */
  get mode(): GroupMode {
    return this.#mode;
  }

  /**
   * In unit mode, the connection sending this page's media to its forwarding unit (for `getStats`);
   * a new one after each fresh offer. Undefined in a mesh, where each peer's `peerConnection` sends.
   *
   * @example
   * const stats = await group.uplink?.getStats();
   * stats?.forEach((s) => s.type === 'outbound-rtp' && console.log(s.kind, s.bytesSent));
   */
  get uplink(): RTCPeerConnection | undefined {
    return this.#uplink?.connection;
  }

  /** What this page sends, once it has it. */
  get localStream(): MediaStream | undefined {
    return this.#media?.stream;
  }

  /**
   * The pages speaking now (this page included), loudest first, as the last `speakers` event gave
   * them; empty until someone speaks. The SDK reads levels from the first `speakers` listener or
   * read of this on, until the page leaves. A peer's level is of the audio this page receives from it
   * (Chromium measures a peer's audio only while the page plays `peer.stream` in a media element);
   * this page's, of what it sends (not measured while it is alone in the group).
   *
   * @example
   * const loudest = group.speakers[0]; // { page, user, level } or undefined
   */
  get speakers(): GroupSpeaker[] {
    if (this.#isLeft()) return [];
    this.#askSpeakers();
    return (this.#watch?.current ?? []).map((s) => this.#speaker(s));
  }

  /** The other pages in the group call now, in the order this page heard of them. */
  get peers(): GroupPeer[] {
    return [...this.#peers.values()];
  }

  /** Adds a listener; returns a function that removes it. */
  on<E extends keyof GroupEvents>(name: E, listener: GroupEvents[E]): () => void {
    const off = this.#emitter.on(name, listener as AnyListener);
    if (name === 'speakers') this.#askSpeakers();
    return off;
  }

  off<E extends keyof GroupEvents>(name: E, listener: GroupEvents[E]): void {
    this.#emitter.off(name, listener as AnyListener);
  }

  /**
   * Leaves the group call: stops this page's media and connections now and tells the service (the
   * others hear `peer-left`). Returns {@link Group.ended}. Leaving again does nothing.
   *
   * @example
   * await group.leave(); // { reason: 'left' }
   */
  leave(): Promise<GroupEnd> {
    if (this.#state === 'left') return this.ended;
    this.#teardown();
    this.#sendLeave();
    return this.ended;
  }

  /** Tells the service the page is out, when it is in the group; else the end is now. */
  #sendLeave(): void {
    // In the group, or its join on the way (the service takes frames in order: the leave follows the join).
    const inGroup = this.#session !== undefined && this.#session === this.#link.session;
    if (!inGroup) {
      this.#over({ reason: 'left' });
      return;
    }
    const ref = this.#link.nextRef();
    this.#link.claim(ref, this.#party);
    if (!this.#link.send({ t: 'group.leave', ref, group: this.name })) {
      this.#link.release(ref, this.#party);
      this.#over({ reason: 'left' });
      return;
    }
    this.#leaveRef = ref;
    // Out of the group already as far as this page goes; the service's word settles `ended`.
    this.#confirmTimer = setTimeout(() => this.#over({ reason: 'left' }), CONFIRM_MS);
  }

  async #join(token: TokenSource, source: CallMediaSource): Promise<void> {
    const [media, text] = await Promise.allSettled([localMedia(source), tokenText(token)]);
    if (media.status === 'fulfilled') {
      if (this.#state === 'left') releaseMedia(media.value);
      else {
        this.#media = media.value;
        this.#emitter.emit('local', media.value.stream);
      }
    }
    if (this.#state === 'left') return;
    if (media.status === 'rejected') return this.#fail(GroupError.of(media.reason, this.name, 'media_failed'));
    if (text.status === 'rejected') return this.#fail(GroupError.of(text.reason, this.name, 'token_failed'));
    for (;;) {
      try {
        await this.#link.whenReady();
      } catch (error) {
        return this.#fail(GroupError.of(error, this.name, 'closed'));
      }
      // Left while waiting (the state changes behind the await).
      if (this.#isLeft()) return;
      const ref = this.#link.nextRef();
      this.#link.claim(ref, this.#party);
      if (this.#link.send({ t: 'group.join', ref, group: this.name, token: text.value })) {
        this.#joinRef = ref;
        this.#session = this.#link.session;
        return;
      }
      // The socket went between the welcome and now: the join goes on the next one.
      this.#link.release(ref, this.#party);
    }
  }

  #joined(frame: GroupJoinedFrame): void {
    this.#forgetJoinRef();
    if (this.#state !== 'joining') return;
    this.#page = typeof frame.page === 'string' ? frame.page : undefined;
    this.#ice = Array.isArray(frame.ice) ? frame.ice : [];
    if (frame.mode === 'unit') this.#mode = 'unit';
    this.#move('joined');
    // In unit mode the page offers to its own unit only (unless a listener left); each peer's unit offers to it.
    if (this.#mode === 'unit' && !this.#isLeft()) this.#startUplink();
    // In a mesh, this page came later than each page there: it offers.
    for (const info of Array.isArray(frame.peers) ? frame.peers : []) this.#add(info, true);
    for (const queued of this.#queued.splice(0)) this.#frame(queued);
    if (this.#wantsSpeakers && !this.#isLeft()) this.#watchSpeakers();
  }

  /** Levels are read only for a page that asked who speaks: the others spend nothing on stats. */
  #askSpeakers(): void {
    this.#wantsSpeakers = true;
    if (this.#state === 'joined') this.#watchSpeakers();
  }

  /** Reads who speaks until the page leaves; tells `speakers` when that changes. */
  #watchSpeakers(): void {
    if (this.#watch || this.#isLeft()) return;
    this.#watch = new SpeakerWatch(
      {
        remotes: () => [...this.#peers.values()].map((peer) => ({ id: peer.page, connection: peer.peerConnection })),
        local: () => this.#localSource(),
      },
      (speakers) => this.#emitter.emit('speakers', { speakers: speakers.map((s) => this.#speaker(s)) }),
      systemClock(),
    );
    this.#watch.start();
  }

  /** This page, and a connection sending its audio: its uplink in unit mode, a connected peer's in a mesh. */
  #localSource(): SpeakerSource | undefined {
    const page = this.#page;
    if (page === undefined) return undefined;
    if (this.#mode === 'unit') return { id: page, connection: this.#uplink?.connection };
    for (const peer of this.#peers.values()) {
      if (peer.state === 'connected' && peer.peerConnection) return { id: page, connection: peer.peerConnection };
    }
    return { id: page, connection: undefined };
  }

  #speaker({ id, level }: SpeakerLevel): GroupSpeaker {
    const user = id === this.#page ? this.#link.user : this.#peers.get(id)?.user;
    return { page: id, user: user ?? '', level };
  }

  /** The group went through units: every page-to-page connection closes, and the page offers to its unit. */
  #toUnit(): void {
    if (this.#mode === 'unit') return;
    this.#mode = 'unit';
    // Signals kept for pages not yet heard of were of the mesh.
    this.#early.clear();
    this.#emitter.emit('mode', this.#mode);
    // A listener may have left the group.
    if (this.#isLeft()) return;
    for (const peer of this.#peers.values()) peer.viaUnit();
    this.#startUplink();
  }

  #startUplink(): void {
    const to = this.#page;
    if (this.#uplink || to === undefined) return;
    this.#uplink = new UnitUplink(this.name, this.#net(), this.#media?.stream ?? new MediaStream(), {
      signal: (data) => {
        if (this.#state === 'joined' && this.#session === this.#link.session) {
          this.#link.send({ t: 'group.signal', group: this.name, to, data });
        }
      },
      failed: (error) => this.#quit(error),
    });
    this.#uplink.start();
  }

  #net(): PeerNet {
    return { ice: this.#ice, rtc: this.#link.rtc };
  }

  /** A frame about the group's other pages; kept until the join is answered. */
  #frame(frame: GroupFrame): void {
    if (this.#state === 'left') return;
    if (this.#state === 'joining') {
      this.#queued.push(frame);
      return;
    }
    if (frame.t === 'group.peer-joined') {
      // A newcomer: it offers, this page answers.
      if (!this.#gone.has(frame.page)) this.#add(frame, false);
    } else if (frame.t === 'group.mode') {
      if (frame.mode === 'unit') this.#toUnit();
    } else if (frame.t === 'group.peer-left') {
      this.#gone.add(frame.page);
      this.#early.delete(frame.page);
      const peer = this.#peers.get(frame.page);
      if (!peer) return;
      this.#peers.delete(frame.page);
      peer.close();
      this.#emitter.emit('peer-left', peer);
    } else if (typeof frame.data === 'object' && frame.data !== null && typeof frame.from === 'string') {
      if (frame.from === this.#page) {
        // The page's own unit (unit mode only).
        this.#uplink?.receive(frame.data);
        return;
      }
      const peer = this.#peers.get(frame.from);
      if (peer) peer.receive(frame.data);
      else if (!this.#gone.has(frame.from)) this.#keepEarly(frame.from, frame.data);
    }
  }

  #add(info: GroupPeerInfo, offer: boolean): void {
    if (typeof info.page !== 'string' || info.page === this.#page || this.#peers.has(info.page)) return;
    const to = info.page;
    const peer = new RemotePeer(info, this.name, this.#net(), {
      signal: (data) => {
        if (this.#state === 'joined' && this.#session === this.#link.session) {
          this.#link.send({ t: 'group.signal', group: this.name, to, data });
        }
      },
      track: (from, track) => this.#emitter.emit('remote', from, track),
      state: (from, state, previous) => this.#emitter.emit('peer-state', from, state, previous),
    });
    this.#peers.set(to, peer);
    this.#emitter.emit('peer-joined', peer);
    // A listener may have left the group.
    if (this.#state !== 'joined') return;
    // In unit mode the peer's unit offers (its offer may be among the early signals).
    if (this.#mode === 'unit') peer.viaUnit();
    else peer.connect(this.#media?.stream ?? new MediaStream(), offer);
    for (const data of this.#early.get(to) ?? []) peer.receive(data);
    this.#early.delete(to);
  }

  #keepEarly(page: string, data: Record<string, unknown>): void {
    let list = this.#early.get(page);
    if (!list) {
      if (this.#early.size >= EARLY_PAGES) return;
      list = [];
      this.#early.set(page, list);
    }
    if (list.length < EARLY_SIGNALS) list.push(data);
  }

  #refused(error: RealtimeSocketError, ref: number): void {
    if (ref === this.#leaveRef) {
      // Not in the group after all (the join was refused, or the page was taken out): out is out.
      this.#over({ reason: 'left' });
      return;
    }
    this.#forgetJoinRef();
    // A join refused after this page left: the leave's answer settles it.
    if (this.#state === 'left') return;
    this.#fail(GroupError.of(error, this.name));
  }

  /**
   * A signal of this group the service refused (no ref); true when the group takes it. `not_in_group`
   * is the page it went to having left as it was sent, a race `peer-left` ends. While the page's offer
   * to its own unit waits for an answer, the refusal is of that offer (`unavailable`: no media port
   * free on the node; `bad_frame`: the unit could not use it): the page's media cannot go, and the
   * group call fails with the service's code. A refusal `from` another page is that page's unit
   * refusing this one a session (`unavailable`): that peer alone fails.
   */
  #signalRefused(error: RealtimeSocketError, from: string | undefined): boolean {
    if (error.code === 'not_in_group') return true;
    if (from !== undefined && from !== this.#page) {
      this.#peers.get(from)?.refused(GroupError.of(error, this.name));
      return true;
    }
    if (this.#uplink?.offering) {
      this.#quit(GroupError.of(error, this.name));
      return true;
    }
    // The refusal of a last signal of a page out of the group: it is out already.
    return this.#isLeft();
  }

  #lost(error: RealtimeSocketError, final: boolean): void {
    if (this.#state === 'left') {
      // The service takes a page out when its socket goes: the leave is done.
      this.#over({ reason: 'left' });
      return;
    }
    // Not yet joined: the join goes on the next socket.
    if (this.#session === undefined && !final) return;
    // The service took this page out with its socket; a new socket is a new page, which joins anew.
    this.#fail(GroupError.of(error, this.name, 'closed'));
  }

  #fail(error: GroupError): void {
    if (this.#state === 'left') return;
    this.#teardown();
    this.#over({ reason: 'failed', error });
  }

  /** Out by an error while in the group (the page's media cannot reach its unit): ends failed, and leaves. */
  #quit(error: GroupError): void {
    if (this.#state === 'left') return;
    this.#teardown();
    this.#settleWith({ reason: 'failed', error });
    this.#sendLeave();
  }

  /** Stops media and every connection; state `left`. */
  #teardown(): void {
    if (this.#state === 'left') return;
    this.#watch?.stop();
    for (const peer of this.#peers.values()) peer.close();
    this.#uplink?.close();
    releaseMedia(this.#media);
    this.#queued = [];
    this.#early.clear();
    this.#move('left');
  }

  /** The end: settled (if not yet) and no longer routed. */
  #over(end: GroupEnd): void {
    this.#settleWith(end);
    this.#forgetJoinRef();
    if (this.#leaveRef !== undefined) this.#link.release(this.#leaveRef, this.#party);
    this.#leaveRef = undefined;
    this.#link.release(this.name, this.#party);
    this.#link.live(this.#party, false);
    if (this.#confirmTimer !== undefined) clearTimeout(this.#confirmTimer);
    this.#confirmTimer = undefined;
  }

  #settleWith(end: GroupEnd): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#settle(end);
    this.#emitter.emit('ended', end);
  }

  #forgetJoinRef(): void {
    if (this.#joinRef !== undefined) this.#link.release(this.#joinRef, this.#party);
    this.#joinRef = undefined;
  }

  #isLeft(): boolean {
    return this.#state === 'left';
  }

  #move(state: GroupState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#emitter.emit('state', state, previous);
  }
}
