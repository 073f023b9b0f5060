/**
 * The storage seams. Each has an embedded implementation (memory or SQLite) and a Redis one;
 * engines/contract holds one test suite per seam that every implementation must pass.
 * Core, HTTP and gateway code depend only on these interfaces, and treat every call as one that may
 * answer later and may fail (a StoreError): a Redis store is on the network.
 */
import type { DeliveryError, DeliveryState, Feature, HistoryRule, Member } from '@realtime/protocol';
import type { DashboardSessionStore } from './dashboard-session-store.js';

/** What a store call answers: at once (embedded) or later (networked). */
export type MaybePromise<T> = T | Promise<T>;

/** Requests per second an app may make, refilled continuously, with a burst allowance. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

export interface App {
  /** The `X-Service-Site` value. */
  key: string;
  secret: string;
  name: string;
  /** Webhook address; empty string when none is set. */
  webhook: string;
  /** The plan: what the app may do. */
  features: Feature[];
  rateLimit: RateLimit;
}

/**
 * Apps and their secrets. Reads are on every API request, so `get` must be cheap;
 * writes come from the CLI or the config file, possibly from another process.
 */
export interface AppStore {
  get(key: string): Promise<App | undefined> | App | undefined;
  list(): Promise<App[]> | App[];
  /** Creates or replaces the app with this key. */
  upsert(app: App): Promise<void> | void;
  /** Replaces the secret; false when no app has the key. */
  setSecret(key: string, secret: string): Promise<boolean> | boolean;
  /** Sets the webhook address ('' clears it); false when no app has the key. */
  setWebhook(key: string, url: string): Promise<boolean> | boolean;
  /** Removes the app with this key; false when there was none. */
  remove(key: string): MaybePromise<boolean>;
  close(): Promise<void> | void;
}

/** One event kept in a room's history. `data` is its JSON text, stored and sent as is. */
export interface KeptEvent {
  id: string;
  event: string;
  data: string;
  /** The user id of the page that sent it, for page sends. */
  from?: string;
}

/**
 * How much one history read returns: at most `events` events, and no more events once their data
 * would pass about `bytes` (a single larger event still comes, alone). A replay reads page by page,
 * so a page that joins never makes the service hold a whole room's history at once.
 */
export interface PageBound {
  events: number;
  bytes: number;
}

/** One page of kept events, oldest first. */
export interface HistoryPage {
  events: KeptEvent[];
  /**
   * Kept events of the read after this page, counted when it was read (0: the page ends the read).
   * The next page is `since` the page's last id.
   */
  remaining: number;
  /**
   * The room's stream: ids are only comparable within one epoch. A stream that was lost (Redis
   * restarted without its data, a key evicted, the SQLite file replaced) starts a new epoch.
   */
  epoch: string;
}

export interface ResumeResult extends HistoryPage {
  /**
   * True when events after the given id were dropped (limit or age) or never kept, or the given
   * epoch is not the room's (its stream was lost): the list has a gap.
   */
  truncated: boolean;
  /** True when kept events after the given id were dropped (limit or age): the gap a slow reader can fall into. */
  dropped: boolean;
}

/**
 * Room history. Contract:
 * - `append` gives the event an id `<ms>-<seq>` strictly greater than every id the room gave before,
 *   stores it, then drops what the rule no longer keeps (beyond `limit` newest, older than `hours`).
 *   Id assignment and storage are atomic: two appends never get the same id.
 * - `since` returns the kept events after `afterId`, oldest first, and whether some were dropped.
 * - `last` returns the newest `count` kept events, oldest first.
 * - Both read one page when given a bound (everything at once without one): the first events of the
 *   read and how many follow; the rest comes by `since` the page's last id, one bounded page at a time.
 * - Every read names the room's epoch; `since` given another epoch answers `truncated`.
 *
 * The service appends through `Broker.publish` (one step with the publication); `append` and
 * `nextId` are the same steps without a publication, for the contract suite and tools.
 */
export interface HistoryStore {
  append(
    app: string,
    room: string,
    entry: { event: string; data: string; from?: string },
    rule: HistoryRule,
    nowMs: number,
  ): Promise<string> | string;
  /**
   * An id for a room event the room does not keep: from the same rising sequence as `append`'s, so
   * every room event has an id and a page can resume after any of them.
   */
  nextId(app: string, room: string, nowMs: number): Promise<string> | string;
  since(
    app: string,
    room: string,
    afterId: string,
    nowMs: number,
    page?: PageBound,
    /** The epoch the reader's `afterId` belongs to; when it is not the room's, the answer is truncated. */
    epoch?: string,
  ): Promise<ResumeResult> | ResumeResult;
  last(app: string, room: string, count: number, nowMs: number, page?: PageBound): Promise<HistoryPage> | HistoryPage;
  /** Removes events past their age everywhere; returns how many went. */
  prune(nowMs: number): Promise<number> | number;
  /**
   * Drops every room of the app (a deleted app): its kept events and what the rooms remember of their
   * ids. An app made again with the key finds its rooms empty. Other apps' rooms are untouched.
   */
  removeApp(app: string, nowMs: number): MaybePromise<void>;
  close(): Promise<void> | void;
}

/** An event on its way to pages: to a room (with its id) or to a user's pages. */
export interface Publication {
  app: string;
  /**
   * Exactly one of room, user, node or broadcast is set. A node is addressed by the answers to its
   * asks (see `ask`), which are not page events.
   */
  room?: string;
  user?: string;
  node?: string;
  /**
   * A broadcast topic's name: every node subscribed to it gets the publication (the service's own
   * messages between nodes, such as which apps a live console watches; never a page event).
   */
  broadcast?: string;
  /**
   * With `node`: the page there a page frame is for. A page frame (`event` `$frame`, to a user or a
   * page) is a whole frame of the page protocol in `data`, handed to the page as is.
   */
  page?: string;
  event: string;
  /** JSON text of the data, encoded once by the emitter. */
  data: string;
  /** The same as UTF-8 bytes, for large data: encoded once and shared by every room's frame. */
  dataBytes?: Buffer;
  /** Every room event has one, from the room's rising sequence; presence changes and user events do not. */
  id?: string;
  from?: string;
  /** The page that sent it (page sends), which does not receive its own event. */
  origin?: string;
  /**
   * An ask: to a user (`event`, `data` are the question; the user's pages on every node get it and
   * answer `replyTo`), or an answer to a node (`event` `$reply` with the reply's data, or `$decline`).
   */
  ask?: string;
  /** An ask's node: where its pages' answers go. */
  replyTo?: string;
}

/** A webhook event stored in the same step as a room event: its JSON text, cut where the event's id goes. */
export interface Report {
  before: string;
  after: string;
}

/** What is handed to `Broker.publish`: a publication before it has its id, and what to store with it. */
export interface Outgoing extends Omit<Publication, 'id'> {
  /** Room events: keep it in the room's history under this rule. */
  keep?: HistoryRule;
  /** Room events: the webhook event to store with it (a page send the token reports). */
  report?: Report;
  /** A presence change (`$member.*`): no id, nothing stored, not part of the room's sequence. */
  presence?: true;
}

export type PublicationHandler = (publication: Publication) => void;

/** Ends one subscription; may be called more than once. */
export type Unsubscribe = () => MaybePromise<void>;

/**
 * Fan-out between nodes, and the one step that orders a room: `publish` gives each room event the
 * next id of its room, stores what it keeps (history, reports) and publishes it. Contract:
 * - Stored before published, all or nothing: when `publish` fails (a StoreError) nothing of the
 *   call was stored or published; once a subscriber has an event, a history read finds it.
 * - One step per room: every subscriber, on every node, receives a room's events in id order,
 *   ids strictly rising, whichever node published them.
 * - Publications from one publisher to one user arrive in the order published.
 * - Handlers never touch storage: they hand publications to the hub.
 */
export interface Broker {
  /**
   * Publishes the events in order; answers each one's id (undefined for user events and presence
   * changes) once it is stored and published.
   */
  publish(events: readonly Outgoing[], nowMs: number): MaybePromise<(string | undefined)[]>;
  /**
   * Starts receiving every publication of the given topic (see topicOf). Answers once the
   * subscription is in effect: a publication made after that reaches the handler. Each call is a
   * subscription of its own, even with the same handler; its unsubscribe ends only that one.
   */
  subscribe(topic: string, handler: PublicationHandler): MaybePromise<Unsubscribe>;
  /**
   * Calls the listener when publications may have been missed: the subscriber connection dropped
   * and its subscriptions are in effect again (pages should resume from history). Brokers that
   * cannot miss any (in memory) leave it out. Answers a function that removes the listener.
   */
  onGap?(listener: () => void): () => void;
  close(): MaybePromise<void>;
}

/**
 * Topic of a publication: one per room and one per user, per app, one per node, and one per broadcast
 * name (every node that subscribed). App keys hold no ':'.
 */
export function topicOf(
  app: string,
  target: { room?: string; user?: string; node?: string; broadcast?: string },
): string {
  if (target.room !== undefined) return `r:${app}:${target.room}`;
  if (target.node !== undefined) return `n:${target.node}`;
  if (target.broadcast !== undefined) return `b:${target.broadcast}`;
  return `u:${app}:${target.user ?? ''}`;
}

/** A user whose `user.offline` is due, handed to one node to report. */
export interface GoneUser {
  app: string;
  user: string;
}

/**
 * Who is where, counted over every node. Pages are named by their id (which carries the node's id).
 * - A user is online from their first open page until the offline delay after their last page closed,
 *   unless a page came back in between (then no `user.offline`: no flapping).
 * - A room is occupied while any page is in it; presence rooms list each user once.
 * Every answer that starts a webhook event (`true` of pageOpened/enterRoom/exitRoom/joinRoom/
 * leaveRoom, each user of takeOffline) is given to exactly one caller, so it is reported once.
 */
export interface PresenceStore {
  /** A page opened as a user; true when the user came online (so `user.online` is reported). */
  pageOpened(app: string, user: string, page: string, nowMs: number): MaybePromise<boolean>;
  /** A page closed; after the user's last, their `user.offline` falls due after the offline delay. */
  pageClosed(app: string, user: string, page: string, nowMs: number): MaybePromise<void>;
  /** Claims up to `limit` users whose `user.offline` is due; each is handed out once, to one caller. */
  takeOffline(nowMs: number, limit: number): MaybePromise<GoneUser[]>;
  /** For each id, whether the user is online now. */
  online(app: string, users: readonly string[], nowMs: number): MaybePromise<boolean[]>;
  /** How many pages the user has open on all nodes (an ask waits for that many answers at most). */
  userPages(app: string, user: string): MaybePromise<number>;
  /** A page took a seat in a room; true when the room had no page on any node (`room.occupied`). */
  enterRoom(app: string, room: string, page: string): MaybePromise<boolean>;
  /** A page left a room; true when it was the room's last page on any node (`room.vacated`). */
  exitRoom(app: string, room: string, page: string): MaybePromise<boolean>;
  /** Adds a page to a presence room; true when it is the user's first page there. */
  joinRoom(app: string, room: string, member: Member, page: string): MaybePromise<boolean>;
  /** Removes a page from a presence room; true when it was the user's last page there. */
  leaveRoom(app: string, room: string, user: string, page: string): MaybePromise<boolean>;
  /** The members of a presence room, each user once, in the order they joined (every one: small rooms, tools). */
  members(app: string, room: string): MaybePromise<Member[]>;
  /**
   * Up to `limit` members in join order, after the member `after` points at (a `cursor` of an earlier
   * page; none: from the first), with the room's count. Walking the cursors gives each member who
   * stays in the room exactly once, whoever joins or leaves meanwhile (a user who leaves and comes
   * back goes to the end).
   */
  memberPage(app: string, room: string, page: { after?: string; limit: number }): MaybePromise<MemberPage>;
  /** How many members the room has, read at one point of the presence sequence (see MemberCount). */
  memberCount(app: string, room: string): MaybePromise<MemberCount>;
  /**
   * The app's users with a page open on any node (a user in the offline delay has none), by id in
   * code point order (UTF-8 byte order), each with their pages: a listing that never walks the store.
   */
  onlineUsers(app: string, range: NameRange): MaybePromise<{ users: OnlineUser[]; more: boolean }>;
  /** The app's rooms with a page in them on any node, by name as onlineUsers, with pages and presence members. */
  occupiedRooms(app: string, range: NameRange): MaybePromise<{ rooms: OccupiedRoom[]; more: boolean }>;
  /**
   * Keeps this node's pages counted for `leaseMs` from now (a store shared by nodes times leases by
   * its own clock, so the nodes' clocks need not agree; `nowMs` where it has none). A node that
   * stops renewing (it died without closing its pages) has them taken out by another node's `sweep`
   * once the lease ended.
   * Answers whether the store still held the node's lease: false at its first renewal, and once a
   * sweep took the node (it was paused past its lease): its pages are no longer counted.
   */
  renew(node: string, nowMs: number, leaseMs: number): MaybePromise<boolean>;
  /**
   * The pages of `node` that hold anything here (open as a user, seated in a room, a presence
   * member): what a live node checks against the pages it really has, to close those whose records
   * outlived them (their close could not be written).
   */
  nodePages(node: string): MaybePromise<string[]>;
  /**
   * Takes the given pages out of every room, presence room and user, as their closes would (what a
   * close did already stays done), and answers what that ended for the caller to report. Each
   * departure is answered once, whoever else closes or sweeps the same pages at the same time.
   * One step: callers give a bounded list (a hundred pages or so) at a time.
   */
  closePages(pages: readonly string[], nowMs: number): MaybePromise<Departure[]>;
  /**
   * Takes the pages of nodes whose lease ended out of every room, presence room and user, as their
   * close would have, and answers what that ended, for the caller to report: each node is swept by
   * one caller only, so each departure is reported once. Users left with no page fall due for
   * `user.offline` as usual (takeOffline). Never the caller's own `node`: a node that sweeps is
   * alive, and its lease only looks ended because the store could not be reached to renew it.
   */
  sweep(nowMs: number, node: string): MaybePromise<Departure[]>;
  close(): MaybePromise<void>;
}

/**
 * A presence room's member count, with the place in the store's presence sequence it was read at:
 * every member change (a user's first page joined, their last page left) takes the next number of one
 * sequence rising over every room, so of two reads of a room, the one with the higher `seq` is the newer.
 */
export interface MemberCount {
  count: number;
  seq: number;
}

/** One page of a presence room's members; `cursor` is set when more may follow. */
export interface MemberPage extends MemberCount {
  members: Member[];
  cursor?: string;
}

/**
 * Which names a listing answers, in code point order: the first `limit` after `after` (none: from the
 * first) that start with `prefix` (none: any); `more` says whether others follow.
 */
export interface NameRange {
  limit: number;
  after?: string;
  prefix?: string;
}

export interface OnlineUser {
  user: string;
  /** Pages the user has open, on every node. */
  pages: number;
}

export interface OccupiedRoom {
  room: string;
  /** Pages in the room, on every node (at least 1). */
  pages: number;
  /** Presence members: users whose page joined it as a presence member, each once (memberCount). */
  members: number;
}

/** What the pages of a dead node ended: a member left a presence room, or a room has no page left. */
export type Departure =
  | { type: 'member.left'; app: string; room: string; member: Member }
  | { type: 'room.vacated'; app: string; room: string };

/** A webhook batch as stored: its exact body is what every try sends. */
export interface StoredBatch {
  id: string;
  app: string;
  body: string;
  events: number;
  state: DeliveryState;
  /** Every try, scheduled or resend. */
  attempts: number;
  /** Scheduled tries that failed (the retry schedule counts these). */
  failed: number;
  status: number;
  error: DeliveryError | null;
  createdAt: number;
  firstTryAt: number | null;
  /** Time of the last try. */
  at: number | null;
  nextAt: number | null;
  /** When it was taken or given up. */
  doneAt: number | null;
}

/** The result of one try. */
export interface TryResult {
  status: number;
  error?: DeliveryError;
}

/**
 * A try's outcome as the tries chart counts it: the class of the answer's status (3xx apart: a
 * redirect is never followed, and is not the receiver refusing), or why nothing answered.
 */
export type TryOutcome = '2xx' | '3xx' | '4xx' | '5xx' | DeliveryError;

/** How long the stores keep tries counted by outcome. */
export const TRY_COUNTS_KEPT_MS = 24 * 3600_000;

/** The tries of one minute by outcome (outcomes without a try left out). */
export interface TryMinute {
  /** The minute's start (ms). */
  at: number;
  outcomes: Partial<Record<TryOutcome, number>>;
}

/** What the webhook queue holds, for metrics. */
export interface WebhookStats {
  /** Events not yet in a batch. */
  waiting: number;
  /** Age of the oldest event not yet delivered (0 when none). */
  oldestWaitingMs: number;
  /** Batches by state. */
  batches: Partial<Record<DeliveryState, number>>;
}

/**
 * Durable webhook queue, shared by every node. Contract:
 * - `addEvent` stores an accepted event before it is acknowledged anywhere: a crash after it loses nothing.
 *   (Page sends store theirs through `Broker.publish`, in the same step as the send.)
 * - `formBatch` moves the oldest waiting events of an app (at most `max`, in order) into a new batch
 *   atomically, with the exact body every try will send; the batch is due at once. Each event goes
 *   into one batch only, however many nodes form batches at once.
 * - A batch is tried by one node at a time: `claimDue`/`claim` lease it to a holder until
 *   `now + leaseMs`; nobody else gets it until `saveTry` by that holder or the lease ends (a node
 *   that died). `saveTry` records a try's result and the next state, and ends the lease.
 */
export interface WebhookStore {
  addEvent(app: string, json: string): MaybePromise<void>;
  /** Apps with events waiting for a batch, with how many. */
  waiting(): MaybePromise<Map<string, number>>;
  formBatch(app: string, batchId: string, max: number, now: number): MaybePromise<StoredBatch | undefined>;
  /** A batch of given event texts, stored and leased to `holder` at once (the test webhook, tried at once). */
  addBatch(
    app: string,
    batchId: string,
    events: string[],
    now: number,
    lease: { holder: string; ms: number },
  ): MaybePromise<StoredBatch>;
  /** Leases up to `limit` due batches (`nextAt` <= now, no lease running), oldest due first. */
  claimDue(now: number, limit: number, lease: { holder: string; ms: number }): MaybePromise<StoredBatch[]>;
  /**
   * Leases one batch whatever its schedule (a resend): the batch, `busy` while another holder's lease
   * runs, undefined when there is no such batch.
   */
  claim(id: string, now: number, lease: { holder: string; ms: number }): MaybePromise<StoredBatch | 'busy' | undefined>;
  get(id: string): MaybePromise<StoredBatch | undefined>;
  /** Newest first. */
  list(app: string, limit: number): MaybePromise<StoredBatch[]>;
  /**
   * Records a try by the lease's holder and ends the lease. With `tried` (a try was made, not a
   * batch handed back or given up untried) it also counts the try under the app, the minute of
   * `batch.at` and the outcome, in the same step, whether or not the lease was still the holder's
   * (the try reached the receiver either way). Counts are kept 24 hours.
   */
  saveTry(batch: StoredBatch, holder: string, tried?: TryOutcome): MaybePromise<void>;
  /**
   * The app's tries counted by saveTry, per minute, for the minutes starting from the one holding
   * `sinceMs` up to `nowMs` and within the 24 hours before `nowMs`; oldest first, minutes without
   * a try left out.
   */
  tryCounts(app: string, sinceMs: number, nowMs: number): MaybePromise<TryMinute[]>;
  /** Removes batches done before `before`; returns how many. */
  prune(before: number): MaybePromise<number>;
  /**
   * Drops everything of the app (a deleted app): its waiting events, its batches whatever their
   * state or lease, and its counted tries. A try of one of its batches saved afterwards writes and
   * counts nothing. An app made again with the key starts with an empty queue.
   */
  removeApp(app: string, nowMs: number): MaybePromise<void>;
  stats(now: number): MaybePromise<WebhookStats>;
  close(): MaybePromise<void>;
}

/**
 * Limits counted over every node (one process embedded; every node on one Redis), so a cluster of N
 * nodes allows what one node would, not N times it. Keys are the caller's; `take` and `acquire`
 * count apart even under the same key. Times are the caller's clock (`nowMs`), as in the other seams.
 */
export interface LimitStore {
  /**
   * A token bucket: holds at most `burst` tokens, starts full, refills at `perSecond` from the
   * newest time it was given (a clock behind it refills nothing and takes nothing away). Takes one
   * token: answers 0, else the milliseconds until one is back (at least 1; Infinity when it never
   * refills). A refused call takes nothing.
   */
  take(key: string, perSecond: number, burst: number, nowMs: number): MaybePromise<number>;
  /**
   * The token bucket of `take`, read without taking: 0 when a token is there now, else the
   * milliseconds until one is back (at least 1; Infinity when it never refills). Changes nothing.
   */
  peek(key: string, perSecond: number, burst: number, nowMs: number): MaybePromise<number>;
  /**
   * Holds `slot` (the caller's unique name for it) among at most `max` held at once under `key`;
   * false when `max` others are held. A slot ends at `release` or after `ttlMs`, so the slots of a
   * node that died come back. Acquiring a slot already held keeps one slot, with the new end.
   */
  acquire(key: string, slot: string, max: number, ttlMs: number, nowMs: number): MaybePromise<boolean>;
  /** Ends a slot; one not held (released already, or ended) changes nothing. */
  release(key: string, slot: string): MaybePromise<void>;
}

/** A call between two people, as the service keeps it while it rings or runs. */
export interface CallRecord {
  app: string;
  /** The service's id for the call (the webhook's `call_id`). */
  id: string;
  /** The customer's name for it (the webhook's `call`): the token's `call.name`, else the id. */
  name: string;
  from: string;
  to: string;
  media: ('audio' | 'video')[];
  /** The caller's page (its id carries its node's). */
  fromPage: string;
  /** The callee's page that accepted; absent while it rings. */
  toPage?: string;
  startedAt: number;
  /** When a page of the callee accepted; absent while it rings. */
  answeredAt?: number;
  /** While it rings: when it ends `missed`. */
  ringUntil: number;
}

/** Why a call ended without a page ending it. */
export type CallLapse = 'missed' | 'failed';

/**
 * Calls, counted over every node (group calls and live streams join this seam later). Contract:
 * - A user is in at most one call at a time (ringing or answered), as caller or callee.
 * - Each change that ends a call (`end`, `takeLapsed`) hands the record to exactly one caller, so
 *   each `call.ended` is reported once, by one node.
 * - A node renews its lease while it lives; a call with a page on a node whose lease lapsed ends
 *   `failed`, claimed by whichever node sweeps first. Times are the caller's clock.
 */
export interface CallStore {
  /**
   * Stores a ringing call unless a user is in a call already: `in_call` when the caller is, `busy`
   * when the callee is (nothing stored then).
   */
  place(call: CallRecord): MaybePromise<'placed' | 'busy' | 'in_call'>;
  /**
   * A page of the callee accepted: the call is answered on that page, once. Answers the record, or
   * undefined when it no longer rings (answered or ended already).
   */
  answer(app: string, id: string, page: string, nowMs: number): MaybePromise<CallRecord | undefined>;
  /** Removes the call and answers its record, to one caller only; undefined when it is gone already. */
  end(app: string, id: string): MaybePromise<CallRecord | undefined>;
  get(app: string, id: string): MaybePromise<CallRecord | undefined>;
  /** The call the user is in (ringing or answered), if any. */
  callOf(app: string, user: string): MaybePromise<CallRecord | undefined>;
  /** Keeps this node counted among the living until `untilMs`. */
  renew(node: string, untilMs: number): MaybePromise<void>;
  /**
   * Claims up to `limit` calls that ended by themselves: ringing past `ringUntil` (`missed`), or with
   * a page on a node whose lease lapsed (`failed`). Each is removed and handed out once.
   */
  takeLapsed(nowMs: number, limit: number): MaybePromise<{ call: CallRecord; reason: CallLapse }[]>;
  close(): MaybePromise<void>;
}

/** A page in a group call. */
export interface GroupMember {
  page: string;
  user: string;
  media: ('audio' | 'video')[];
  joinedAt: number;
}

/** A member whose page's node died, claimed to be reported as gone. */
export interface LapsedMember {
  app: string;
  group: string;
  member: GroupMember;
}

/** How many pages a group call takes, and from how many on its media goes through forwarding units. */
export interface GroupLimits {
  max: number;
  unitFrom: number;
}

/** A page that joined a group call: who was there, and how the group's media flows now. */
export interface GroupJoin {
  before: GroupMember[];
  /** The group is in unit mode (it reached `unitFrom` pages since it last was empty). */
  unit: boolean;
  /** This join switched it to unit mode: true for exactly one join per switch. */
  switched: boolean;
}

/**
 * Group calls, counted over every node. Contract:
 * - A group holds at most `max` pages; a page is in it at most once.
 * - The join that brings a group to `unitFrom` pages switches it to unit mode, once; it stays in
 *   unit mode until its last page is out (then a new group of that name starts in mesh).
 * - Each departure (`leave`, `takeLapsed`) hands the member to exactly one caller, so each
 *   `group.left` is reported once, by one node.
 * - A member whose page's node lease lapsed (see `renew`) is claimed by whichever node sweeps first.
 */
export interface GroupStore {
  /**
   * Adds a page to a group call: the members there before it, `full` when it holds `max` already,
   * `already` when the page is in it (nothing changes then).
   */
  join(
    app: string,
    group: string,
    member: GroupMember,
    limits: GroupLimits,
  ): MaybePromise<GroupJoin | 'full' | 'already'>;
  /** Takes a page out; answers its member record to one caller only, undefined when it was not in. */
  leave(app: string, group: string, page: string): MaybePromise<GroupMember | undefined>;
  /** The members now, in the order they joined. */
  members(app: string, group: string): MaybePromise<GroupMember[]>;
  /** Whether the group is in unit mode now. */
  unit(app: string, group: string): MaybePromise<boolean>;
  /** Keeps this node counted among the living until `untilMs`. */
  renew(node: string, untilMs: number): MaybePromise<void>;
  /** Claims up to `limit` members whose page's node lease lapsed; each is removed and handed out once. */
  takeLapsed(nowMs: number, limit: number): MaybePromise<LapsedMember[]>;
  close(): MaybePromise<void>;
}

/** A page on a live stream: presenting, or watching (without `user`: a visitor, never reported). */
export interface StreamMember {
  page: string;
  user?: string;
  role: 'presenter' | 'viewer';
}

/** A signed-in person on a stream while it is live: `stream.joined`. */
export interface StreamWatch {
  /** Pairs the `stream.joined` with its `stream.left`: unique per pair. */
  watch: string;
  user: string;
  role: 'presenter' | 'viewer';
  joinedAt: number;
}

/** A watch that closed: `stream.left` (`seconds` is live time: `leftAt - joinedAt`). */
export interface StreamWatchEnd extends StreamWatch {
  leftAt: number;
}

/**
 * What one store call changed that webhooks report, handed to exactly one caller: report `live`
 * (`stream.live`), then `joined`, then `left`, then `ended` (`stream.ended`).
 */
export interface StreamChange {
  /** The stream went live at this time. */
  live?: number;
  /** The live run that ended. */
  ended?: { startedAt: number; endedAt: number };
  joined: StreamWatch[];
  left: StreamWatchEnd[];
}

/** A stream now: its presenter's page, and when its live run started if it is live. */
export interface StreamState {
  presenter?: string;
  liveSince?: number;
}

/** A member whose page's node died, claimed and taken off its stream. */
export interface LapsedStreamMember {
  app: string;
  stream: string;
  member: StreamMember;
  change: StreamChange;
}

/**
 * Live streams, over every node. Contract:
 * - A stream has at most one presenter and at most `max` pages; a page is on it at most once.
 * - A live run goes from `goLive` to `stopLive`, the presenter's `leave`, or its lapse. While it is
 *   live every signed-in member has one open watch; a visitor never has one.
 * - Each change is handed to exactly one caller, so each webhook event is reported once, by one node.
 * - Watch ids are `<run>.<n>`: the caller names each run (`goLive`'s `run`), the store numbers its watches.
 * - A member whose page's node lease lapsed (see `renew`) is claimed by whichever node sweeps first.
 */
export interface StreamStore {
  /**
   * Puts a page on a stream: `taken` when it would present and another page does, `full` when the
   * stream holds `max` pages, `already` when the page is on it (nothing changes then). Joining while
   * live opens the member's watch (in `change.joined`).
   */
  join(
    app: string,
    stream: string,
    member: StreamMember,
    max: number,
    nowMs: number,
  ): MaybePromise<{ state: StreamState; change: StreamChange } | 'taken' | 'full' | 'already'>;
  /** Takes a page off: its watch closes, and the live run ends when it presented. Undefined when it was not on. */
  leave(
    app: string,
    stream: string,
    page: string,
    nowMs: number,
  ): MaybePromise<{ member: StreamMember; change: StreamChange } | undefined>;
  /** The presenter's media connected: the run `run` starts, with a watch per signed-in member. Undefined unless `page` presents a stream not live. */
  goLive(app: string, stream: string, page: string, run: string, nowMs: number): MaybePromise<StreamChange | undefined>;
  /** The presenter's media stopped (it stays the presenter): the live run ends. Undefined unless `page` presents a live stream. */
  stopLive(app: string, stream: string, page: string, nowMs: number): MaybePromise<StreamChange | undefined>;
  state(app: string, stream: string): MaybePromise<StreamState>;
  /** The pages on the stream now, in the order they came. */
  members(app: string, stream: string): MaybePromise<StreamMember[]>;
  /** Keeps this node counted among the living until `untilMs`. */
  renew(node: string, untilMs: number): MaybePromise<void>;
  /** Claims up to `limit` members whose page's node lease lapsed; each is taken off (as `leave` does) and handed out once. */
  takeLapsed(nowMs: number, limit: number): MaybePromise<LapsedStreamMember[]>;
  close(): MaybePromise<void>;
}

/**
 * One way to store everything: the embedded engine (SQLite file, memory fan-out, one process) or
 * Redis (any number of nodes). Made by engines/embedded.ts or engines/redis/; the rest of the
 * service sees only this.
 */
export interface Engine {
  readonly kind: 'embedded' | 'redis';
  /** This process among the nodes: page ids and leases carry it. Random per start. */
  readonly node: string;
  apps: AppStore;
  history: HistoryStore;
  broker: Broker;
  presence: PresenceStore;
  webhooks: WebhookStore;
  /** The API rate limit per app and asks in flight per user, over all nodes. */
  limits: LimitStore;
  /** Calls between two people (group calls and live streams follow). */
  calls: CallStore;
  groups: GroupStore;
  streams: StreamStore;
  /** The dashboard's signing secret and open sessions, shared by every node. */
  dashboardSessions: DashboardSessionStore;
  /** A cheap round trip to the storage (readiness probes); rejects with a StoreError when it cannot. */
  check(): Promise<void>;
  /**
   * Runs `repair` when the storage lost data it held (Redis restarted without it), before it serves
   * again: the node puts back what it must (the apps of its configuration). Engines that cannot
   * lose data behind the service's back leave it out.
   */
  onDataLost?(repair: () => Promise<void>): () => void;
  /** Closes every store; what is kept stays for the next start. */
  close(): Promise<void>;
}
