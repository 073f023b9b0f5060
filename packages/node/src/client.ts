import { type AskRequest, deriveKey, type EmitEvent, type EventIds, LIMITS, type Reply } from '@realtime/protocol';
import { field, isRecordArray, isStringArray, isStringRecord, isStringRecordArray } from './answers.js';
import { type LocalKeyInput, parseLocalKey } from './local-key.js';
import { apiPath, onlineQuery } from './paths.js';
import { createTransport, DEFAULT_TIMEOUT_MS, type Transport } from './request.js';
import {
  type HistoryOptions,
  type HistoryPage,
  listRooms,
  type MembersOptions,
  type MembersPage,
  type RoomInfo,
  type RoomsOptions,
  type RoomsPage,
  readHistory,
  readMembers,
  readRoom,
} from './rooms.js';
import { keyForLabel, openJson, sealJson } from './sealing.js';
import {
  type CallTokenOptions,
  type IdentityTokenOptions,
  mintCallToken,
  mintIdentityToken,
  mintRoomToken,
  mintStreamGrant,
  type RoomTokenOptions,
  type StreamGrantOptions,
} from './tokens.js';
import { Webhooks } from './webhooks.js';

/** Options of {@link Realtime}. */
export interface RealtimeOptions {
  /** Base address of the service, e.g. `https://realtime.example.com`. */
  url: string;
  /** App key (sent as `X-Service-Site`). */
  key: string;
  /** App secret. Only the keys derived from it (publish, channels, calls, stream grant) are kept. */
  secret: string;
  /**
   * The app's local key for sealing (32 bytes, as bytes, 64 hex characters or base64url).
   * Needed only by {@link Realtime.seal}, {@link Realtime.open} and {@link Realtime.keyFor}.
   */
  localKey?: LocalKeyInput | undefined;
  /** Time limit of one request in milliseconds; default 10,000. An ask gets its own timeout on top. */
  timeoutMs?: number | undefined;
  /** Clock in milliseconds since the epoch, for tests; default `Date.now`. */
  now?: (() => number) | undefined;
}

/** Options of {@link Realtime.ask}: the body fields of the ask endpoint. */
export type AskOptions = AskRequest;

/**
 * The client of the realtime service for the customer's server: sends events, asks pages,
 * checks who is online, manages webhooks and seals data. Keep one per app and process: it holds
 * a keep-alive connection pool; {@link Realtime.close} frees it.
 *
 * Every API method rejects with a {@link RealtimeError}. A `network` error on a POST does not prove
 * the service did nothing: the request may have arrived before the connection failed.
 *
 * @example
 * const realtime = new Realtime({ url: 'https://realtime.example.com', key: 'app1', secret: process.env.RT_SECRET ?? '' });
 * const ids = await realtime.emit({ rooms: ['lobby'], event: 'hello', data: { text: 'hi' } });
 * await realtime.close();
 */
export class Realtime {
  /** The webhook endpoints: `test()`, `list()`, `resend(batchId)`. */
  readonly webhooks: Webhooks;
  readonly #transport: Transport;
  readonly #timeoutMs: number;
  readonly #localKey: Uint8Array | undefined;
  readonly #channelsKey: Uint8Array;
  readonly #callsKey: Uint8Array;
  readonly #streamGrantKey: Uint8Array;
  readonly #now: () => number;

  constructor(options: RealtimeOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('Realtime needs an options object');
    if (typeof options.secret !== 'string' || options.secret.length === 0) {
      throw new TypeError('`secret` (the app secret) must be a non-empty string');
    }
    // Parsed now so that a wrong key fails at start-up rather than at the first seal.
    this.#localKey = options.localKey === undefined ? undefined : parseLocalKey(options.localKey);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#channelsKey = deriveKey(options.secret, 'channels');
    this.#callsKey = deriveKey(options.secret, 'calls');
    this.#streamGrantKey = deriveKey(options.secret, 'streamGrant');
    this.#now = options.now ?? Date.now;
    this.#transport = createTransport({
      url: options.url,
      key: options.key,
      secret: options.secret,
      timeoutMs: this.#timeoutMs,
      now: options.now,
    });
    this.webhooks = new Webhooks(this.#transport);
  }

  /**
   * Sends an event to rooms and/or users. Resolves with the ids of the event in the rooms that keep it
   * (those named in `history`); other rooms have no id.
   *
   * @example
   * const ids = await realtime.emit({ rooms: ['lobby'], event: 'chat', data: { text: 'hi' }, history: { lobby: [100, 24] } });
   * ids.lobby // '1700000000000-0'
   */
  async emit(event: EmitEvent, options: EmitOptions = {}): Promise<EventIds> {
    const answer = await this.#transport.signedRequest(
      'POST',
      apiPath('emit'),
      JSON.stringify(event),
      idempotencyOptions(options),
    );
    return field(answer, 'ids', isStringRecord, 'an object of event ids');
  }

  /**
   * Sends up to 100 events in one request; checked whole, so one bad event refuses them all.
   * Resolves with the ids of each event, in the order given.
   *
   * @example
   * const [first, second] = await realtime.emitBatch([
   *   { rooms: ['a'], event: 'x', data: 1 },
   *   { users: ['alice'], event: 'y', data: 2 },
   * ]);
   */
  async emitBatch(events: EmitEvent[], options: EmitOptions = {}): Promise<EventIds[]> {
    const answer = await this.#transport.signedRequest(
      'POST',
      apiPath('emit', 'batch'),
      JSON.stringify({ events }),
      idempotencyOptions(options),
    );
    return field(answer, 'ids', isStringRecordArray, 'an array of event id objects');
  }

  /**
   * Closes every open page of the user, on every node, with close code 4004: the pages do not
   * reconnect by themselves (the browser SDK's state becomes `closed` with that code). Resolves once
   * the service has sent the close on its way to every node.
   *
   * @example
   * await realtime.disconnect('alice'); // after banning Alice
   */
  async disconnect(userId: string): Promise<void> {
    await this.#transport.signedRequest('POST', apiPath('users', userId, 'disconnect'));
  }

  /**
   * Refuses from now on the identity and room tokens issued before `before` (ms since the epoch;
   * default now) for one user, or for every user of the app without `user`, and closes the pages
   * holding them (close code 4005: pages whose tokens come from functions fetch fresh ones).
   *
   * @example
   * await realtime.revokeTokens({ user: 'alice' }); // after Alice changed her password
   * await realtime.revokeTokens({ before: Date.parse('2026-11-27T10:00:00Z') }); // every user
   */
  async revokeTokens(options: RevokeTokensOptions = {}): Promise<void> {
    const body = JSON.stringify({
      ...(options.user === undefined ? {} : { user: options.user }),
      before: options.before ?? this.#now(),
    });
    await this.#transport.signedRequest('POST', apiPath('tokens', 'revoke'), body);
  }

  /**
   * Sends an event to the open pages of one user and waits for their replies: the first one, or with
   * `all` every reply until `timeout` (milliseconds, 1 to 30,000, default 5,000). Resolves with `[]`
   * when no page replied.
   *
   * @example
   * const [reply] = await realtime.ask('alice', { event: 'confirm', data: { amount: 10 }, timeout: 10_000 });
   * if (reply) console.log(reply.data, new Date(reply.at));
   */
  async ask(userId: string, options: AskOptions): Promise<Reply[]> {
    const { event, data, timeout, all } = options;
    const body = JSON.stringify({ event, data, timeout, all });
    // The service holds the answer for up to `timeout`; the request's own limit comes on top of it.
    const waitMs = typeof timeout === 'number' && Number.isFinite(timeout) ? timeout : LIMITS.askTimeoutDefaultMs;
    const answer = await this.#transport.signedRequest('POST', apiPath('users', userId, 'ask'), body, {
      timeoutMs: this.#timeoutMs + Math.max(0, Math.min(waitMs, LIMITS.askTimeoutMaxMs)),
    });
    return field(answer, 'replies', isRecordArray, 'an array of replies') as unknown as Reply[];
  }

  /**
   * Which of the given users are online, in the order given, once each. An empty list resolves
   * to `[]` without a request; more than 1,000 ids fail with `too_many`.
   *
   * @example
   * const online = await realtime.online(['alice', 'bob']); // ['alice']
   */
  async online(ids: string[]): Promise<string[]> {
    if (!Array.isArray(ids)) throw new TypeError('online() takes an array of user ids');
    if (ids.length === 0) return [];
    const answer = await this.#transport.signedRequest('GET', `${apiPath('online')}?${onlineQuery(ids)}`);
    return field(answer, 'online', isStringArray, 'an array of user ids');
  }

  // ---- The room reads: what is live, over every node (docs/api.md, "Rooms").

  /**
   * One page of the app's occupied rooms, by name, with their pages and presence users; pass the
   * answer's `cursor` back for the next page (none: the list is done).
   *
   * @example
   * let cursor: string | undefined;
   * do {
   *   const page = await realtime.rooms({ prefix: 'game:', cursor });
   *   for (const { room, pages } of page.rooms) console.log(room, pages);
   *   cursor = page.cursor;
   * } while (cursor);
   */
  rooms(options: RoomsOptions = {}): Promise<RoomsPage> {
    return listRooms(this.#transport, options);
  }

  /**
   * One room now: its pages, presence users, kept events count and epoch. A room nobody is in
   * answers zeros.
   *
   * @example
   * const { pages, users, kept, epoch } = await realtime.room('lobby');
   */
  room(name: string): Promise<RoomInfo> {
    return readRoom(this.#transport, name);
  }

  /**
   * One page of a presence room's members, in join order, with the room's member count. Fails with
   * `not_included` on a plan without presence.
   *
   * @example
   * const { count, members, cursor } = await realtime.members('lobby', { limit: 50 });
   */
  members(room: string, options: MembersOptions = {}): Promise<MembersPage> {
    return readMembers(this.#transport, room, options);
  }

  /**
   * One page of a room's kept events, oldest first, as pages get them (sealed data stays sealed):
   * `last` n, `since` an id (with its `epoch`), the next page by `cursor`, or from the oldest. Fails
   * with `not_included` on a plan without history.
   *
   * @example
   * // A page's first view, rendered on the server: the page then joins with since and epoch.
   * const { events, epoch } = await realtime.history('lobby', { last: 50 });
   * const since = events.at(-1)?.id;
   */
  history(room: string, options: HistoryOptions = {}): Promise<HistoryPage> {
    return readHistory(this.#transport, room, options);
  }

  /**
   * Mints an identity token for a page of this user (JWT, HS256 under the channels key). Give it to
   * the page, which passes it to `connect({ identity })`.
   *
   * @example
   * const identity = await realtime.identityToken('alice', { info: { name: 'Alice' }, expiresIn: 3600 });
   */
  identityToken(userId: string, options: IdentityTokenOptions = {}): Promise<string> {
    return mintIdentityToken(this.#channelsKey, userId, options, Math.floor(this.#now() / 1000));
  }

  /**
   * Mints a room token: what a page may do in one room (send, presence, sealed, history, webhook rules).
   *
   * @example
   * const token = await realtime.roomToken('lobby', { userId: 'alice', send: ['chat'], w: ['chat'], presence: true });
   */
  roomToken(room: string, options: RoomTokenOptions = {}): Promise<string> {
    return mintRoomToken(this.#channelsKey, room, options, Math.floor(this.#now() / 1000));
  }

  /**
   * Mints a call token for a page of this user (JWT, HS256 under the calls key): `{ to }` lets it call
   * that user (`name`: your own name for the call, reported by the webhooks), `{ group }` lets it join
   * that group call. `media` is `['audio']` or `['audio', 'video']` (the default).
   *
   * @example
   * const token = await realtime.callToken('alice', { to: 'bob', media: ['audio'] });
   * const group = await realtime.callToken('alice', { group: 'standup' });
   */
  callToken(userId: string, options: CallTokenOptions): Promise<string> {
    return mintCallToken(this.#callsKey, userId, options, Math.floor(this.#now() / 1000));
  }

  /**
   * Mints a stream grant (JWT, HS256 under the stream grant key): a presenter may send the live
   * stream, a viewer watch it. Without `userId` the page is a visitor, never reported by webhooks.
   *
   * @example
   * const presenter = await realtime.streamGrant('keynote', { role: 'presenter', userId: 'alice' });
   * const visitor = await realtime.streamGrant('keynote', { role: 'viewer' });
   */
  streamGrant(stream: string, options: StreamGrantOptions): Promise<string> {
    return mintStreamGrant(this.#streamGrantKey, stream, options, Math.floor(this.#now() / 1000));
  }

  /**
   * Seals a JSON value under a label (`room:<name>`, `user:<id>`, see `roomLabel`/`userLabel`),
   * so that the service carries it without being able to read it. Needs `localKey`.
   *
   * @example
   * await realtime.emit({ rooms: ['vault'], event: 'secret', data: realtime.seal(roomLabel('vault'), { pin: 1234 }) });
   */
  seal(label: string, value: unknown): string {
    return sealJson(this.#requireLocalKey('seal'), label, value);
  }

  /**
   * Opens a sealed value of this app back to its JSON value. Returns null for anything that does not
   * open: not a string, another app's value, a changed value, an empty label, not JSON inside, or, when
   * `label` is given, a value sealed under another label (so a value from one room cannot pass for
   * another's). A sealed `null` opens to null too. Never throws on bad input; throws a TypeError only
   * when the client was made without `localKey`.
   *
   * @example
   * const [reply] = await realtime.ask('alice', { event: 'pin' });
   * const pin = realtime.open(reply?.data, userLabel('alice'));
   */
  open(sealed: unknown, label?: string): unknown {
    return openJson(this.#requireLocalKey('open'), sealed, label);
  }

  /**
   * The sealing key of a label, for the customer's server to hand to the pages that may read it.
   * Needs `localKey`.
   *
   * @example
   * const key = realtime.keyFor(userLabel('alice')); // 32 bytes; give to alice's pages, e.g. base64url-encoded
   */
  keyFor(label: string): Uint8Array {
    return keyForLabel(this.#requireLocalKey('keyFor'), label);
  }

  /**
   * Closes the connection pool once the requests under way have finished. Later calls fail with `network`.
   *
   * @example
   * process.on('SIGTERM', () => void realtime.close());
   */
  close(): Promise<void> {
    return this.#transport.close();
  }

  #requireLocalKey(method: string): Uint8Array {
    if (this.#localKey === undefined) {
      throw new TypeError(`${method}() needs the app's local key: pass \`localKey\` to new Realtime({ ... })`);
    }
    return this.#localKey;
  }
}

/** Options of {@link Realtime.emit} and {@link Realtime.emitBatch}. */
export interface EmitOptions {
  /**
   * Makes a retry safe: the service delivers once per key (1 to 200 printable ASCII characters) and
   * answers a retry with the same body, within 5 minutes, with the same ids. The same key with another
   * body fails with `idempotency_conflict`. Use a new key for each distinct emit.
   *
   * @example
   * const key = randomUUID();
   * await realtime.emit(event, { idempotencyKey: key }).catch(() => realtime.emit(event, { idempotencyKey: key }));
   */
  idempotencyKey?: string;
}

/** Options of {@link Realtime.revokeTokens}. */
export interface RevokeTokensOptions {
  /** The user whose tokens are revoked; without it, every user's. */
  user?: string;
  /** Tokens issued before this time (ms since the epoch) are refused; default now. */
  before?: number;
}

function idempotencyOptions(options: EmitOptions): { headers?: Record<string, string> } {
  const key = options.idempotencyKey;
  if (key === undefined) return {};
  if (typeof key !== 'string') throw new TypeError('`idempotencyKey` must be a string');
  return { headers: { 'Idempotency-Key': key } };
}
