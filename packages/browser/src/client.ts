import {
  type ErrorFrame,
  isReservedEvent,
  LIMITS,
  roomNameProblem,
  type ServerFrame,
  type WelcomeFrame,
} from '@realtime/protocol';
import { type AskHandler, AskResponder } from './ask.js';
import type { Call } from './calls/call.js';
import { Calls } from './calls/calls.js';
import type { IncomingCall } from './calls/incoming.js';
import type { CallOptions, RtcOptions } from './calls/types.js';
import { type BackoffPolicy, DEFAULT_BACKOFF } from './connection/backoff.js';
import { systemClock, type Timers } from './connection/clock.js';
import { Connection, type Disconnect, type IdentitySource, type StateChange } from './connection/connection.js';
import type { ConnectionState } from './connection/states.js';
import type { WebSocketConstructor } from './connection/transport.js';
import { type AnyListener, Emitter } from './emitter.js';
import { RealtimeSocketError } from './errors.js';
import type { Group } from './groups/group.js';
import { Groups } from './groups/groups.js';
import type { GroupOptions } from './groups/types.js';
import { DEFAULT_OUTBOX, Outbox, type OutboxLimits } from './outbox.js';
import { Requests } from './requests.js';
import { type JoinOptions, type QueuedSend, Room, type RoomLink } from './room.js';
import type { LiveStream } from './streams/live-stream.js';
import { Streams } from './streams/streams.js';
import type { StreamOptions } from './streams/types.js';
import { socketUrl } from './url.js';

/**
 * Options of {@link connect}.
 *
 * @example
 * // In Node, `import { connect } from '@realtime/browser'` needs no WebSocket: the package's node
 * // entry passes Node's own, or the ws package's before Node 22. Tests may inject one, and make
 * // reconnects immediate:
 * import { WebSocket } from 'ws';
 * connect({ url: 'http://127.0.0.1:8080', site: 'app1', WebSocket, random: () => 0 });
 */
export interface ConnectOptions {
  /** The service's base address: `https://rt.example.com` (http(s) or ws(s); relative to the page allowed). */
  url: string;
  /** The app key (site key) of the customer's app. */
  site: string;
  /**
   * Who the page's user is: an identity token minted by the customer's server, or a function
   * giving one (called before every connect and reconnect, so an expired identity is refreshed).
   * Absent, or a function giving null/undefined/'': the page is anonymous.
   */
  identity?: string | IdentitySource | undefined;
  /** WebSocket constructor; default `globalThis.WebSocket` (in Node, the package's node entry gives ws's when Node has none). */
  WebSocket?: WebSocketConstructor | undefined;
  /** Clock in milliseconds; default `Date.now`. */
  now?: (() => number) | undefined;
  /** Random number in [0, 1) for backoff jitter; default `Math.random`. */
  random?: (() => number) | undefined;
  /** Timers; default the global `setTimeout` / `clearTimeout`. */
  timers?: Timers | undefined;
  /** Reconnect delays; default 500 ms base, 5 s base after a "back off" close, 30 s cap. */
  reconnect?: Partial<BackoffPolicy> | undefined;
  /** Time allowed from the start of an attempt to the service's welcome (ms); default 10,000. */
  connectTimeoutMs?: number | undefined;
  /** Bounds of the sends waiting for the connection; default 1,000 frames and 4 MiB. */
  outbox?: Partial<OutboxLimits> | undefined;
  /** WebRTC options of calls: a candidate filter, the ICE transport policy, the media connect timeout. */
  rtc?: RtcOptions | undefined;
}

/** A handler for each frame type the service sends, typed by its frame. */
type FrameHandlers = { [T in ServerFrame['t']]?: (frame: Extract<ServerFrame, { t: T }>) => void };

/**
 * About one user event (an event sent to the page's user rather than to a room).
 *
 * @example
 * client.on('notice', (data, { event, from }) => console.log(event, from, data));
 */
export interface UserEventMeta {
  event: string;
  /**
   * Undefined: user events come from the customer's server (`emit` to `users`), never from a page.
   * Kept so a user event's meta reads like a room event's.
   */
  from: string | undefined;
}

/**
 * The page's connection to the realtime service, from {@link connect}. It reconnects by itself
 * (capped exponential backoff with full jitter) until {@link RealtimeClient.close} or a close code
 * that says stop; its rooms re-join and resume where they were.
 *
 * Listener names starting with `$` are the SDK's (`$state`, `$error`); every other name is a user event.
 *
 * @example
 * const client = connect({ url: 'https://rt.example.com', site: 'app1', identity: () => fetchIdentity() });
 * client.on('$state', ({ state }) => setBadge(state));
 * client.on('notice', (data) => toast(data));
 * client.answer('confirm', async (data) => ({ ok: await askUser(data) }));
 */
export class RealtimeClient {
  readonly #connection: Connection;
  readonly #emitter = new Emitter();
  readonly #requests = new Requests();
  readonly #rooms = new Map<string, Room>();
  readonly #outbox: Outbox<QueuedSend>;
  readonly #asks: AskResponder;
  readonly #link: RoomLink;
  readonly #calls: Calls;
  readonly #groups: Groups;
  readonly #streams: Streams;
  #user: string | null | undefined;
  /** Rises at each welcome and each loss: names the socket frames and answers belong to. */
  #session = 0;
  readonly #handlers = new Map<string, (frame: never) => void>();
  /** Features' claims on error frames (a call's refused frame), asked before the requests. */
  readonly #errorOwners: ((frame: ErrorFrame, error: RealtimeSocketError) => boolean)[] = [];

  /** Use {@link connect}. */
  constructor(options: ConnectOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('connect needs an options object');
    const url = socketUrl(options.url, options.site);
    const WebSocket = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor | undefined }).WebSocket;
    if (typeof WebSocket !== 'function') {
      throw new TypeError('no WebSocket here: pass `WebSocket` (in Node before 22, the WebSocket of the ws package)');
    }
    const identity = identitySource(options.identity);
    this.#outbox = new Outbox({ ...DEFAULT_OUTBOX, ...definedOnly(options.outbox) });
    this.#asks = new AskResponder(
      (frame, session) => {
        if (session === this.#session) this.#connection.send(frame);
      },
      () => this.#session,
    );
    const client = this;
    this.#link = {
      get ready() {
        return client.#connection.ready;
      },
      get session() {
        return client.#session;
      },
      outbox: this.#outbox,
      request: (frame, handlers, json) => {
        const ref = this.#requests.open(frame, handlers);
        let text = JSON.stringify({ ...frame, ref });
        // The data was encoded when `send` was called: spliced in, not encoded again.
        if (json !== undefined) text = `${text.slice(0, -1)},"data":${json}}`;
        if (!this.#connection.sendText(text)) {
          this.#requests.fail(ref, new RealtimeSocketError('disconnected', 'the socket is closing; nothing was sent'));
        }
      },
      forget: (room) => {
        if (this.#rooms.get(room.name) === room) this.#rooms.delete(room.name);
      },
    };
    this.#connection = new Connection(
      {
        url,
        WebSocket,
        identity,
        identityRefreshes: typeof options.identity === 'function',
        clock: systemClock({ now: options.now, timers: options.timers }),
        random: options.random ?? Math.random,
        backoff: { ...DEFAULT_BACKOFF, ...definedOnly(options.reconnect) },
        connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      },
      {
        welcome: (frame) => this.#welcome(frame),
        frame: (frame) => this.#receive(frame),
        lost: (cause, final) => this.#lost(cause, final),
        state: (change) => this.#emitter.emit('$state', change),
        error: (error) => this.#emitter.emit('$error', error),
      },
    );
    for (const [type, handler] of Object.entries(this.#frameHandlers())) this.#handlers.set(type, handler);
    this.#calls = new Calls(
      {
        get ready() {
          return client.#connection.ready;
        },
        get session() {
          return client.#session;
        },
        send: (frame) => this.#connection.send(frame),
        ring: (incoming) => this.#emitter.emit('$call', incoming),
      },
      options.rtc,
    );
    for (const [type, handler] of Object.entries(this.#calls.frameHandlers())) this.#handlers.set(type, handler);
    this.#errorOwners.push((frame, error) => this.#calls.ownsError(frame, error));
    this.#groups = new Groups({
      rtc: this.#calls.rtc,
      get user() {
        return client.#user;
      },
      get session() {
        return client.#session;
      },
      send: (frame) => this.#connection.send(frame),
      whenReady: () => this.#calls.whenReady(),
      nextRef: () => this.#calls.nextRef(),
    });
    for (const [type, handler] of Object.entries(this.#groups.frameHandlers())) this.#handlers.set(type, handler);
    this.#errorOwners.push((frame, error) => this.#groups.ownsError(frame, error));
    this.#streams = new Streams(
      {
        get ready() {
          return client.#connection.ready;
        },
        get session() {
          return client.#session;
        },
        send: (frame) => this.#connection.send(frame),
      },
      options.rtc,
    );
    for (const [type, handler] of Object.entries(this.#streams.frameHandlers())) this.#handlers.set(type, handler);
    this.#errorOwners.push((frame, error) => this.#streams.ownsError(frame, error));
    this.#connection.start();
  }

  /** `connecting`, `connected`, `reconnecting` or `closed`. */
  get state(): ConnectionState {
    return this.#connection.state;
  }

  /** The page's user id from the last welcome; null for an anonymous page; undefined before the first welcome. */
  get user(): string | null | undefined {
    return this.#user;
  }

  /** Listens to state changes; returns a function that removes the listener. */
  on(name: '$state', listener: (change: StateChange) => void): () => void;
  /** Listens to errors that belong to no request: error frames without a pending `ref`, identity failures. */
  on(name: '$error', listener: (error: RealtimeSocketError) => void): () => void;
  /**
   * Listens to calls ringing on this page (see {@link IncomingCall}).
   *
   * @example
   * client.on('$call', (incoming) => {
   *   if (!confirm(`${incoming.from} is calling`)) return incoming.reject();
   *   const call = incoming.accept();
   *   call.on('remote', (_track, stream) => (video.srcObject = stream));
   * });
   */
  on(name: '$call', listener: (incoming: IncomingCall) => void): () => void;
  /** Listens to a user event (sent to this page's user). `data` is as sent, unchecked. */
  on<T = unknown>(name: string, listener: (data: T, meta: UserEventMeta) => void): () => void;
  on(name: string, listener: AnyListener): () => void {
    return this.#emitter.on(name, listener);
  }

  off(name: string, listener: AnyListener): void {
    this.#emitter.off(name, listener);
  }

  /**
   * Answers asks for `event` from the customer's server: the handler's value (or its promise's) is the
   * reply; a handler that throws or rejects declines. One handler per event; returns a function that
   * removes it. Asks for events without a handler are declined at once.
   *
   * @example
   * client.answer('location', async () => sealWith(userKey, 'user:alice', await currentPosition()));
   */
  answer<T = unknown>(event: string, handler: AskHandler<T>): () => void {
    if (typeof event !== 'string' || event === '') throw new TypeError('an ask event name is a non-empty string');
    return this.#asks.set(event, handler as AskHandler);
  }

  /**
   * Joins a room (now if connected, else once connected) and keeps it joined across reconnects.
   * Joining a room already joined gives the same {@link Room} and sends its new token.
   * Throws a TypeError for a room name or options the service would refuse.
   *
   * @example
   * const room = client.join('lobby', { token: () => fetchRoomToken('lobby'), history: 20 });
   */
  join(name: string, options: JoinOptions): Room {
    const problem = typeof name === 'string' ? roomNameProblem(name) : 'a room name is a string';
    if (problem) throw new TypeError(problem);
    checkJoinOptions(options);
    const existing = this.#rooms.get(name);
    if (existing) {
      existing.rejoin(options);
      return existing;
    }
    const room = new Room(name, options, this.#link);
    if (this.state === 'closed') {
      room.end(new RealtimeSocketError('closed', 'the client is closed', { room: name }));
      return room;
    }
    this.#rooms.set(name, room);
    room.rejoin();
    return room;
  }

  /** The room of that name, if joined and not left. */
  room(name: string): Room | undefined {
    return this.#rooms.get(name);
  }

  /**
   * Calls a user: every open page of theirs rings. Returns the {@link Call} at once; it gets the
   * media (default `{ audio: true }`, with `getUserMedia`) and the call token, then invites once
   * connected. Throws a TypeError for a bad user id or options, or where there is no WebRTC.
   *
   * @example
   * const call = client.call('bob', {
   *   token: () => fetch('/rt/call-token?to=bob').then((r) => r.text()),
   *   media: { audio: true, video: true },
   * });
   * call.on('remote', (_track, stream) => (remoteVideo.srcObject = stream));
   * call.on('ended', ({ reason, error }) => showEnded(reason, error?.code));
   */
  call(userId: string, options: CallOptions): Call {
    return this.#calls.place(userId, options);
  }

  /**
   * Presents on or watches a live stream, by the grant's role (or `role`). Returns the
   * {@link LiveStream} at once; a presenter gets its media (default camera and microphone), then the
   * page goes on the stream once connected. The page's stream of that name while it is on it.
   * Throws a TypeError for a bad name or options, or where there is no WebRTC.
   *
   * @example
   * const stream = client.stream('keynote', { grant: () => fetch('/rt/grant/keynote').then((r) => r.text()) });
   * stream.on('remote', (_track, media) => (video.srcObject = media)); // a viewer's, each live run
   * stream.on('ended', () => showOffAir());
   */
  stream(name: string, options: StreamOptions): LiveStream {
    return this.#streams.open(name, options);
  }

  /**
   * Joins a group call: the page sends its media (default `{ audio: true }`, with `getUserMedia`) to
   * each other page and gets theirs, page to page in a small group, through the service's forwarding
   * units from its unit size on ({@link Group.mode}). Returns the {@link Group} at once; it gets
   * the media and the call token, then joins once connected. Joining a group the page is in gives the
   * same Group. Throws a TypeError for a bad name or options, or where there is no WebRTC.
   *
   * @example
   * const group = client.group('standup', {
   *   token: () => fetch('/rt/group-token?group=standup').then((r) => r.text()),
   *   media: { audio: true, video: true },
   * });
   * group.on('peer-joined', (peer) => addTile(peer.user, peer.stream));
   * group.on('peer-left', (peer) => removeTile(peer.page));
   */
  group(name: string, options: GroupOptions): Group {
    return this.#groups.open(name, options);
  }

  /** Closes the connection for good (code 1000), hanging up calls and leaving group calls first. Rooms end; waiting sends reject with `closed`. */
  close(): void {
    this.#calls.leave();
    this.#groups.leave();
    this.#streams.leave();
    this.#connection.close();
  }

  #welcome(frame: WelcomeFrame): void {
    this.#session++;
    this.#user = typeof frame.user === 'string' ? frame.user : null;
    for (const room of [...this.#rooms.values()]) room.rejoin();
    this.#calls.welcome();
    this.#streams.welcome();
  }

  /** The handlers of the frames the service sends, by type (`t`): one per frame type. */
  #frameHandlers(): FrameHandlers {
    const answer = (frame: ServerFrame): void => {
      this.#requests.answer(frame as Parameters<Requests['answer']>[0]);
    };
    return {
      joined: answer,
      left: answer,
      sent: answer,
      listed: answer,
      members: (frame) => {
        if (typeof frame.room === 'string') this.#rooms.get(frame.room)?.membersChanged(frame);
      },
      error: (frame) => {
        const error = RealtimeSocketError.fromFrame(frame);
        // A feature's frame (a call's) may own the error; else the request of its ref; else $error.
        if (this.#errorOwners.some((owns) => owns(frame, error))) return;
        if (!this.#requests.fail(frame.ref, error)) this.#emitter.emit('$error', error);
      },
      event: (frame) => {
        if (typeof frame.room === 'string') {
          this.#rooms.get(frame.room)?.deliver(frame);
        } else if (typeof frame.event === 'string' && !isReservedEvent(frame.event)) {
          // `$` names are the SDK's own listeners: a user event cannot take them.
          const meta: UserEventMeta = {
            event: frame.event,
            from: typeof frame.from === 'string' ? frame.from : undefined,
          };
          this.#emitter.emit(frame.event, frame.data, meta);
        }
      },
      ask: (frame) => {
        void this.#asks.handle(frame);
      },
    };
  }

  #receive(frame: ServerFrame): void {
    // Frames of a newer protocol have no handler here: ignored.
    const handler = this.#handlers.get(frame.t) as ((frame: ServerFrame) => void) | undefined;
    handler?.(frame);
  }

  #lost(cause: Disconnect, final: boolean): void {
    this.#session++;
    const error = final
      ? new RealtimeSocketError('closed', `the connection closed: ${cause.reason || cause.code}`)
      : new RealtimeSocketError('disconnected', `the connection was lost before the service answered (${cause.code})`);
    this.#requests.failAll(error);
    this.#calls.lost(error, final);
    this.#groups.lost(error, final);
    this.#streams.lost(error, final);
    for (const room of [...this.#rooms.values()]) {
      if (final) room.end(new RealtimeSocketError('closed', error.message, { room: room.name }));
      else room.suspend();
    }
  }
}

/**
 * Connects a page to the realtime service. Returns at once; the client connects in the background
 * and reports its state through `$state`.
 *
 * @example
 * import { connect } from '@realtime/browser';
 * const client = connect({ url: 'https://rt.example.com', site: 'app1', identity: () => fetch('/rt/identity').then((r) => r.text()) });
 * const room = client.join('lobby', { token: () => fetch('/rt/room/lobby').then((r) => r.text()) });
 * room.on('chat', (data, { from }) => console.log(from, data));
 */
export function connect(options: ConnectOptions): RealtimeClient {
  return new RealtimeClient(options);
}

function identitySource(identity: ConnectOptions['identity']): IdentitySource | undefined {
  if (identity === undefined || identity === null) return undefined;
  if (typeof identity === 'function') return identity;
  if (typeof identity === 'string') return () => identity;
  throw new TypeError('`identity` must be a token string or a function giving one');
}

function checkJoinOptions(options: JoinOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('join needs options with a `token`');
  const { token, history } = options;
  if (!(typeof token === 'function' || (typeof token === 'string' && token !== ''))) {
    throw new TypeError('`token` must be a room token or a function giving one');
  }
  if (history !== undefined && !(Number.isInteger(history) && history >= 1 && history <= LIMITS.historyMaxEvents)) {
    throw new TypeError(`\`history\` must be a whole number from 1 to ${LIMITS.historyMaxEvents}`);
  }
}

/** The fields of a partial options object that are set, so `{ x: undefined }` keeps the default. */
function definedOnly<T extends object>(value: T | undefined): Partial<T> {
  if (!value) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
