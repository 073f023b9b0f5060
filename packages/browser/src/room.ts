import {
  type EventFrame,
  eventNameProblem,
  isReservedEvent,
  type JoinedFrame,
  type JoinFrame,
  LIMITS,
  type Member,
  type MembersFrame,
  utf8Length,
} from '@realtime/protocol';
import { type AnyListener, Emitter } from './emitter.js';
import { RealtimeSocketError } from './errors.js';
import { isNewerEventId } from './event-id.js';
import { Members, toMember } from './members.js';
import type { Outbox, OutboxEntry } from './outbox.js';
import type { AnswerHandlers, AnswerTo, RequestFrame } from './requests.js';

/**
 * A room token, or a function that fetches one; the function is called on every (re)join.
 *
 * @example
 * const token: TokenSource = () => fetch('/rt/room/lobby').then((r) => r.text());
 */
export type TokenSource = string | (() => string | Promise<string>);

/**
 * Options of `client.join`.
 *
 * @example
 * client.join('lobby', { token: () => fetchRoomToken('lobby'), history: 50 });
 */
export interface JoinOptions {
  /** The room token minted by the customer's server (`roomToken` of `@realtime/node`), or a function giving one. */
  token: TokenSource;
  /** On the first join, replay the last `history` kept events (1 to 1,000) before live ones. */
  history?: number;
  /**
   * Start after this event id instead (wins over `history`): the last id of a first view your server
   * rendered from the history read (`history` of `@realtime/node`), or one the page kept across a
   * reload. The first join replays what came after it, `truncated` when some of it is gone.
   */
  since?: string;
  /** The history read's `epoch`, with `since`: a different one now means the room started over. */
  epoch?: string;
}

/**
 * About one room event, given to listeners with its data.
 *
 * @example
 * room.on('chat', (data, { id, from }) => render({ id, from, data }));
 */
export interface RoomEventMeta {
  room: string;
  event: string;
  /** The event's id (`<ms>-<seq>`); absent on presence events. */
  id: string | undefined;
  /** The user who sent it, for page sends by a page with an identity. */
  from: string | undefined;
}

/**
 * Given to `$joined` listeners and by {@link Room.joined}, each time the service answers a join.
 *
 * @example
 * room.on('$joined', ({ resumed, members }) => resumed || renderMembers(members));
 */
export interface JoinedInfo {
  room: string;
  /** How many kept events follow before live ones. */
  replay: number;
  /** True when events were lost: the service no longer kept all events since the last one seen. */
  truncated: boolean;
  /** True for every join after the first: a re-join after a reconnect or a token refresh. */
  resumed: boolean;
  /**
   * The members now (presence rooms; empty otherwise). In a large room only the first page of them:
   * `count` says how many there are, {@link Room.moreMembers} fetches the rest.
   */
  members: Member[];
  /** Large presence rooms only: how many members the room has (`members` is its first page). */
  count?: number;
}

/**
 * Given to `$members` listeners: the member changes of a large presence room over a short window,
 * and its count after them.
 *
 * @example
 * room.on('$members', ({ count }) => showOnline(count));
 */
export interface MembersChange {
  room: string;
  joined: Member[];
  /** User ids. */
  left: string[];
  count: number;
}

/**
 * Given to `$truncated` listeners: events after `since` may be missing.
 *
 * @example
 * room.on('$truncated', () => reloadFromServer());
 */
export interface TruncatedInfo {
  room: string;
  /** The last event id the page had seen when it re-joined. */
  since: string | undefined;
}

/**
 * Where a room is, as {@link Room.status}:
 * - `joining`: waiting for the connection or for `joined` (also after each reconnect);
 * - `joined`: in the room; sends are written at once;
 * - `failed`: the service refused the join (the error went to `$error`); tried again after the next reconnect;
 * - `left`: after `leave()` or the client's close; final.
 *
 * @example
 * if (room.status === 'joined') enableComposer();
 */
export type RoomStatus = 'joining' | 'joined' | 'failed' | 'left';

/** A send waiting in the outbox. */
export interface QueuedSend extends OutboxEntry {
  event: string;
  /** The data's JSON text, encoded when `send` was called (undefined: no data). */
  json: string | undefined;
  resolve(id: string): void;
  reject(error: RealtimeSocketError): void;
}

/** What a room needs from its client: the socket, the outbox and its place in the client. */
export interface RoomLink {
  /** Welcomed: frames written now are taken. */
  readonly ready: boolean;
  /** The number of the current socket: an async step started on an older one does nothing. */
  readonly session: number;
  /** Writes a request with a fresh `ref`; `json` is the data's JSON text of a `send`. */
  request<F extends RequestFrame>(frame: F, handlers: AnswerHandlers<AnswerTo<F>>, json?: string): void;
  readonly outbox: Outbox<QueuedSend>;
  forget(room: Room): void;
}

const MEMBER_JOINED = '$member.joined';
const MEMBER_LEFT = '$member.left';

/**
 * One joined room, from `client.join`. Joins when the client is connected and re-joins after every
 * reconnect with `since` set to the last event id it saw, so listeners get every kept event they
 * missed, in order, each once.
 *
 * Listener names starting with `$` are the room's own: `$joined`, `$truncated`, `$error` (from the
 * SDK) and `$member.joined`, `$member.left` (presence). Every other name is an app event, and `*`
 * listens to all room events.
 *
 * @example
 * const room = client.join('lobby', { token: () => fetchRoomToken('lobby'), history: 50 });
 * room.on('chat', (data, { from }) => show(from, data));
 * room.on('$truncated', () => showGapNotice());
 * await room.joined;
 * const id = await room.send('chat', { text: 'hi' });
 */
export class Room {
  /** The room's name. */
  readonly name: string;
  /**
   * Settles with the first join: resolves with its {@link JoinedInfo}, or rejects with the
   * {@link RealtimeSocketError} that refused it (or `left` / `closed`). Later joins emit `$joined`.
   */
  readonly joined: Promise<JoinedInfo>;
  readonly #link: RoomLink;
  readonly #emitter = new Emitter();
  readonly #members = new Members();
  /** The room's count from the service (large rooms); undefined while the list is the whole room. */
  #count: number | undefined;
  /** Where the next page of members starts; undefined when the list has every page. */
  #cursor: string | undefined;
  #listing: Promise<Member[]> | undefined;
  /** Users who left while a page of members was on its way: that page must not bring them back. */
  #leftWhileListing: Set<string> | undefined;
  #token: TokenSource;
  #history: number | undefined;
  #status: RoomStatus = 'joining';
  #lastId: string | undefined;
  /** The room's epoch from the last `joined`: the history stream `#lastId` belongs to. */
  #epoch: string | undefined;
  #everJoined = false;
  /** The service refused `since` / `last` (`not_included`): join without them from now on. */
  #noHistory = false;
  /** A resume from this id was refused: the next `joined` reports truncation from it. */
  #gap: { since: string } | undefined;
  #failure: RealtimeSocketError | undefined;
  #settleJoined: { resolve(info: JoinedInfo): void; reject(error: RealtimeSocketError): void } | undefined;

  /** Made by `client.join`; not meant to be called directly. */
  constructor(name: string, options: JoinOptions, link: RoomLink) {
    this.name = name;
    this.#link = link;
    this.#token = options.token;
    this.#history = options.history;
    // The first join resumes from it, as a re-join does from the last event seen.
    this.#lastId = options.since;
    if (options.since !== undefined) this.#epoch = options.epoch;
    this.joined = new Promise<JoinedInfo>((resolve, reject) => {
      this.#settleJoined = { resolve, reject };
    });
    // Awaiting `joined` is optional: a refused join must not be an unhandled rejection.
    this.joined.catch(() => {});
  }

  get status(): RoomStatus {
    return this.#status;
  }

  /** The id of the last room event delivered; the next re-join asks for what came after it. */
  get lastId(): string | undefined {
    return this.#lastId;
  }

  /**
   * The room's history epoch from the last `joined` (undefined without history). It goes with
   * `since` on each re-join; a new one means the room's history was lost and started over.
   */
  get epoch(): string | undefined {
    return this.#epoch;
  }

  /**
   * The presence members now, each user once (empty in a room without presence). While
   * reconnecting it holds the last known members; the re-join replaces them and tells the
   * difference as `$member.joined` / `$member.left`.
   */
  members(): Member[] {
    return this.#members.list();
  }

  /**
   * How many members the room has. In a small room the length of {@link Room.members}; in a large one
   * (over the service's threshold, 100 by default) the service's count, which the list reaches only
   * once every page was fetched.
   */
  get memberCount(): number {
    return this.#count ?? this.#members.size;
  }

  /** True while a large room has members the page has not fetched ({@link Room.moreMembers}). */
  get hasMoreMembers(): boolean {
    return this.#cursor !== undefined;
  }

  /**
   * Fetches the next page of a large room's members and adds them to {@link Room.members}; resolves
   * with the members it added (none when every page is here). One page at a time: a call while one
   * is on its way gets that one. Rejects with a {@link RealtimeSocketError} when the service refused
   * or the socket was lost (the next call asks again, from the page the re-join gave).
   *
   * @example
   * while (room.hasMoreMembers) render(await room.moreMembers());
   */
  moreMembers(): Promise<Member[]> {
    if (this.#listing) return this.#listing;
    const cursor = this.#cursor;
    if (cursor === undefined || this.#status !== 'joined' || !this.#link.ready) return Promise.resolve([]);
    const left = new Set<string>();
    this.#leftWhileListing = left;
    const listing = new Promise<Member[]>((resolve, reject) => {
      this.#link.request(
        { t: 'list', room: this.name, cursor },
        {
          answer: (frame) => {
            if (this.#cursor !== cursor) {
              // A re-join started the list over meanwhile: this page belongs to the old one.
              resolve([]);
              return;
            }
            const added: Member[] = [];
            for (const value of Array.isArray(frame.members) ? frame.members : []) {
              const member = toMember(value);
              if (member && !left.has(member.user) && this.#members.add(member)) added.push(member);
            }
            this.#cursor = typeof frame.cursor === 'string' ? frame.cursor : undefined;
            if (typeof frame.count === 'number') this.#count = frame.count;
            resolve(added);
          },
          fail: reject,
        },
      );
    }).finally(() => {
      if (this.#listing === listing) this.#listing = undefined;
      if (this.#leftWhileListing === left) this.#leftWhileListing = undefined;
    });
    this.#listing = listing;
    return listing;
  }

  /** Listens to the room's own events; returns a function that removes the listener. */
  on(name: '$joined', listener: (info: JoinedInfo) => void): () => void;
  on(name: '$truncated', listener: (info: TruncatedInfo) => void): () => void;
  on(name: '$error', listener: (error: RealtimeSocketError) => void): () => void;
  /** Listens to presence changes: a user's first page joined, or their last page left. */
  on(name: '$member.joined' | '$member.left', listener: (member: Member, meta: RoomEventMeta) => void): () => void;
  /** Listens to the coalesced member changes of a large presence room (each also told as `$member.*`). */
  on(name: '$members', listener: (change: MembersChange) => void): () => void;
  /** Listens to an app event (`*`: every room event). `data` is as sent, unchecked: type it at your own risk. */
  on<T = unknown>(name: string, listener: (data: T, meta: RoomEventMeta) => void): () => void;
  on(name: string, listener: AnyListener): () => void {
    return this.#emitter.on(name, listener);
  }

  off(name: string, listener: AnyListener): void {
    this.#emitter.off(name, listener);
  }

  /**
   * Sends an event to the others in the room; resolves with its id once the service took it.
   * Before the room is joined (or while reconnecting) the send waits in the bounded outbox.
   * Rejects with a {@link RealtimeSocketError}: the service's code (`not_allowed`, `not_sealed`, ...),
   * `outbox_full`, `too_large`, `bad_data`, `left`, `closed`, or `disconnected` when the socket was
   * lost after writing it (the event may or may not have been sent).
   *
   * @example
   * const id = await room.send('chat', { text: 'hi' });
   */
  send(event: string, data?: unknown): Promise<string> {
    if (this.#status === 'left') return Promise.reject(this.#failure ?? this.#error('left', 'the room was left'));
    if (this.#status === 'failed' && this.#failure) return Promise.reject(this.#failure);
    if (typeof event !== 'string' || eventNameProblem(event) !== undefined) {
      return Promise.reject(
        this.#error('bad_frame', `event name: ${eventNameProblem(String(event)) ?? 'not a string'}`),
      );
    }
    if (isReservedEvent(event)) return Promise.reject(this.#error('reserved', 'event names starting with $ are kept'));
    let json: string | undefined;
    try {
      json = data === undefined ? undefined : JSON.stringify(data);
      if (data !== undefined && json === undefined) throw new TypeError(`${typeof data} has no JSON form`);
    } catch (cause) {
      return Promise.reject(
        new RealtimeSocketError('bad_data', 'the data has no JSON form', { room: this.name, cause }),
      );
    }
    const bytes = json === undefined ? 0 : utf8Length(json);
    if (bytes > LIMITS.dataBytes || bytes < 0) {
      return Promise.reject(this.#error('too_large', 'the data is over 1 MB'));
    }
    return new Promise<string>((resolve, reject) => {
      if (!this.#link.outbox.push({ room: this.name, bytes, event, json, resolve, reject })) {
        reject(this.#error('outbox_full', 'too many sends are waiting for the connection'));
        return;
      }
      this.#flush();
    });
  }

  /** Leaves the room: stops its events and its re-joins. Resolves once the service answered or the socket is gone. */
  leave(): Promise<void> {
    if (this.#status === 'left') return Promise.resolve();
    this.end(this.#error('left', 'the room was left'));
    if (!this.#link.ready) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#link.request({ t: 'leave', room: this.name }, { answer: () => resolve(), fail: () => resolve() });
    });
  }

  // The methods below are driven by the client.

  /** (Re-)joins: on each welcome, and when `client.join` gives the room a new token. */
  rejoin(options?: JoinOptions): void {
    if (this.#status === 'left') return;
    if (options) {
      this.#token = options.token;
      if (options.history !== undefined) this.#history = options.history;
    }
    if (!this.#link.ready) return;
    if (this.#status !== 'joined') this.#status = 'joining';
    void this.#join(this.#link.session);
  }

  /** The socket is gone: sends wait again until the next join. */
  suspend(): void {
    if (this.#status === 'joined') this.#status = 'joining';
  }

  /** Final: the room was left or the client closed. Waiting sends and a pending first join fail with `error`. */
  end(error: RealtimeSocketError): void {
    if (this.#status === 'left') return;
    this.#status = 'left';
    this.#failure = error;
    this.#link.forget(this);
    for (const entry of this.#link.outbox.take(this.name)) entry.reject(error);
    this.#settleJoined?.reject(error);
    this.#settleJoined = undefined;
  }

  /** A room event from the service. */
  deliver(frame: EventFrame): void {
    if (this.#status === 'left' || typeof frame.event !== 'string') return;
    const presence = frame.event === MEMBER_JOINED || frame.event === MEMBER_LEFT;
    // Other `$` names are the SDK's own listeners (`$joined`, `$error`, ...): no frame may reach them.
    if (!presence && isReservedEvent(frame.event)) return;
    const id = typeof frame.id === 'string' ? frame.id : undefined;
    if (id !== undefined) {
      // A replay may repeat what the page already has: only ids after the last one seen are new.
      if (!isNewerEventId(id, this.#lastId)) return;
      this.#lastId = id;
    }
    if (presence) {
      const member = toMember(frame.data);
      if (!member) return;
      const changed = frame.event === MEMBER_JOINED ? this.#members.add(member) : this.#members.remove(member.user);
      // Each user once: a repeated join (or a leave of a non-member) changes nothing and is not told.
      if (!changed) return;
    }
    this.#emit(frame.data, {
      room: this.name,
      event: frame.event,
      id,
      from: typeof frame.from === 'string' ? frame.from : undefined,
    });
  }

  /**
   * The member changes of a large room over a window. Each change to the list is told as a
   * `$member.joined` / `$member.left` too; a user the page had not fetched who leaves changes no list.
   */
  membersChanged(frame: MembersFrame): void {
    if (this.#status === 'left') return;
    const joined: Member[] = [];
    const left: string[] = [];
    for (const user of Array.isArray(frame.left) ? frame.left : []) {
      if (typeof user !== 'string') continue;
      left.push(user);
      this.#leftWhileListing?.add(user);
      const gone = this.#members.take(user);
      if (gone) this.#emit(gone, this.#presenceMeta(MEMBER_LEFT));
    }
    for (const value of Array.isArray(frame.joined) ? frame.joined : []) {
      const member = toMember(value);
      if (!member) continue;
      joined.push(member);
      this.#leftWhileListing?.delete(member.user);
      if (this.#members.add(member)) this.#emit(member, this.#presenceMeta(MEMBER_JOINED));
    }
    if (typeof frame.count === 'number') this.#count = frame.count;
    this.#emitter.emit('$members', {
      room: this.name,
      joined,
      left,
      count: this.memberCount,
    } satisfies MembersChange);
  }

  /** Tells the listeners of the event's name, then those of `*`. */
  #emit(data: unknown, meta: RoomEventMeta): void {
    this.#emitter.emit(meta.event, data, meta);
    if (meta.event !== '*') this.#emitter.emit('*', data, meta);
  }

  async #join(session: number): Promise<void> {
    let token: string;
    try {
      token = typeof this.#token === 'function' ? await this.#token() : this.#token;
      if (typeof token !== 'string' || token === '') throw new TypeError('the token function gave no token');
    } catch (cause) {
      if (session === this.#link.session && this.#status !== 'left') {
        this.#fail(
          new RealtimeSocketError('token_failed', 'the room token function failed', { room: this.name, cause }),
        );
      }
      return;
    }
    if (session !== this.#link.session || !this.#link.ready || this.#status === 'left') return;
    const frame: Omit<JoinFrame, 'ref'> = { t: 'join', room: this.name, token };
    if (!this.#noHistory) {
      if (this.#lastId !== undefined) {
        frame.since = this.#lastId;
        if (this.#epoch !== undefined) frame.epoch = this.#epoch;
      } else if (this.#history !== undefined) frame.last = this.#history;
    }
    this.#link.request(frame, {
      answer: (joined) => this.#onJoined(joined, frame),
      fail: (error) => this.#onJoinRefused(error, frame, session),
    });
  }

  #onJoined(frame: JoinedFrame, sent: Omit<JoinFrame, 'ref'>): void {
    if (this.#status === 'left') return;
    const resumed = this.#everJoined;
    this.#everJoined = true;
    this.#status = 'joined';
    this.#failure = undefined;
    const gap = this.#gap;
    this.#gap = undefined;
    const epoch = typeof frame.epoch === 'string' ? frame.epoch : undefined;
    // Another epoch: the room's history was lost and started over, so the id the page resumed from
    // belongs to the old stream. The new stream's ids need not be above it: stop comparing with it
    // (unless a live event meanwhile already gave a newer id).
    const lost = sent.epoch !== undefined && epoch !== undefined && epoch !== sent.epoch;
    if (lost && this.#lastId === sent.since) this.#lastId = undefined;
    this.#epoch = epoch;
    const truncated = frame.truncated === true || gap !== undefined || lost;
    this.#leftWhileListing = undefined;
    if (Array.isArray(frame.members) && typeof frame.count === 'number') {
      // A large room: its first page. What the page knew of the rest is dropped, untold (it cannot
      // tell who left from who is on a later page); the count says how many there are.
      this.#members.replace(frame.members);
      this.#count = frame.count;
      this.#cursor = typeof frame.cursor === 'string' ? frame.cursor : undefined;
    } else if (Array.isArray(frame.members)) {
      const change = this.#members.replace(frame.members);
      this.#count = undefined;
      this.#cursor = undefined;
      // After a reconnect, tell who came and went while the page was away.
      if (resumed) this.#announce(change);
    } else {
      this.#members.clear();
      this.#count = undefined;
      this.#cursor = undefined;
    }
    const info: JoinedInfo = {
      room: this.name,
      replay: typeof frame.replay === 'number' ? frame.replay : 0,
      truncated,
      resumed,
      members: this.#members.list(),
    };
    if (this.#count !== undefined) info.count = this.#count;
    this.#emitter.emit('$joined', info);
    if (truncated) {
      this.#emitter.emit('$truncated', { room: this.name, since: sent.since ?? gap?.since } satisfies TruncatedInfo);
    }
    this.#settleJoined?.resolve(info);
    this.#settleJoined = undefined;
    this.#flush();
  }

  #onJoinRefused(error: RealtimeSocketError, sent: Omit<JoinFrame, 'ref'>, session: number): void {
    if (this.#status === 'left' || error.code === 'disconnected') return; // re-joined after the reconnect
    if (error.code === 'not_included' && (sent.since !== undefined || sent.last !== undefined)) {
      // The app's plan has no history: join without it. Events missed while away are lost.
      this.#noHistory = true;
      if (sent.since !== undefined) this.#gap = { since: sent.since };
      else this.#emitter.emit('$error', error);
      void this.#join(session);
      return;
    }
    this.#fail(error);
  }

  #fail(error: RealtimeSocketError): void {
    this.#status = 'failed';
    this.#failure = error;
    for (const entry of this.#link.outbox.take(this.name)) entry.reject(error);
    this.#settleJoined?.reject(error);
    this.#settleJoined = undefined;
    this.#emitter.emit('$error', error);
  }

  #announce(change: { joined: Member[]; left: Member[] }): void {
    for (const member of change.left) this.#emit(member, this.#presenceMeta(MEMBER_LEFT));
    for (const member of change.joined) this.#emit(member, this.#presenceMeta(MEMBER_JOINED));
  }

  #presenceMeta(event: string): RoomEventMeta {
    return { room: this.name, event, id: undefined, from: undefined };
  }

  /** Writes the room's waiting sends, oldest first, once it is joined on a live socket. */
  #flush(): void {
    if (this.#status !== 'joined' || !this.#link.ready) return;
    for (const entry of this.#link.outbox.take(this.name)) {
      this.#link.request(
        { t: 'send', room: this.name, event: entry.event },
        { answer: (sent) => entry.resolve(sent.id), fail: (error) => entry.reject(error) },
        entry.json,
      );
    }
  }

  #error(code: string, message: string): RealtimeSocketError {
    return new RealtimeSocketError(code, message, { room: this.name });
  }
}
