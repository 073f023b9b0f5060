/**
 * The storage seams. Each has an embedded implementation (memory or SQLite) and, later, a Redis one;
 * engines/contract holds one test suite per seam that every implementation must pass.
 * HTTP and gateway code depend only on these interfaces.
 */
import type { DeliveryError, DeliveryState, Feature, HistoryRule, Member } from '@realtime/protocol';

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
}

export interface ResumeResult extends HistoryPage {
  /** True when events after the given id were dropped (limit or age) or never kept, so the list has a gap. */
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
  ): Promise<ResumeResult> | ResumeResult;
  last(app: string, room: string, count: number, nowMs: number, page?: PageBound): Promise<HistoryPage> | HistoryPage;
  /** Removes events past their age everywhere; returns how many went. */
  prune(nowMs: number): Promise<number> | number;
  close(): Promise<void> | void;
}

/** An event on its way to pages: to a room (with its id when kept) or to a user's pages. */
export interface Publication {
  app: string;
  /** Exactly one of room or user is set. */
  room?: string;
  user?: string;
  event: string;
  /** JSON text of the data, encoded once by the emitter. */
  data: string;
  /** The same as UTF-8 bytes, for large data: encoded once and shared by every room's frame. */
  dataBytes?: Buffer;
  id?: string;
  from?: string;
  /** The page that sent it (page sends), which does not receive its own event. */
  origin?: string;
}

export type PublicationHandler = (publication: Publication) => void;

/**
 * Fan-out between processes. The memory broker calls handlers inline; the Redis broker calls them
 * from its subscriber loop. Handlers never touch storage: they hand publications to the hub.
 * Publications from one publisher to one room arrive in the order published.
 */
export interface Broker {
  publish(publication: Publication): Promise<void> | void;
  /**
   * Starts receiving every publication of the given topic (see topicOf); returns a stop function.
   * Each call is a subscription of its own, even with the same handler; its stop function ends only
   * that subscription and may be called more than once.
   */
  subscribe(topic: string, handler: PublicationHandler): () => void;
  close(): Promise<void> | void;
}

/** Topic of a publication: one per room and one per user, per app. App keys hold no ':'. */
export function topicOf(app: string, target: { room?: string; user?: string }): string {
  return target.room !== undefined ? `r:${app}:${target.room}` : `u:${app}:${target.user ?? ''}`;
}

/**
 * Who is online. A user is online from their first open page until `user.offline` would be sent:
 * the offline delay after their last page closed, unless a page came back in between.
 */
export interface PresenceStore {
  pageOpened(app: string, user: string, nowMs: number): Promise<void> | void;
  pageClosed(app: string, user: string, nowMs: number): Promise<void> | void;
  /** For each id, whether the user is online now. */
  online(app: string, users: readonly string[], nowMs: number): Promise<boolean[]> | boolean[];
  /** Adds a page to a presence room; true when it is the user's first page there. */
  joinRoom(app: string, room: string, member: Member, page: string): Promise<boolean> | boolean;
  /** Removes a page from a presence room; true when it was the user's last page there. */
  leaveRoom(app: string, room: string, user: string, page: string): Promise<boolean> | boolean;
  /** The members of a presence room, each user once, in the order they joined. */
  members(app: string, room: string): Promise<Member[]> | Member[];
  close(): Promise<void> | void;
}

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
 * Durable webhook queue. Contract:
 * - `addEvent` stores an accepted event before it is acknowledged anywhere: a crash after it loses nothing.
 * - `formBatch` moves the oldest waiting events of an app (at most `max`, in order) into a new batch in
 *   one transaction, with the exact body every try will send; the batch is due at once.
 * - Batches due (`nextAt` <= now) are tried; `saveTry` records a try's result and the next state.
 */
export interface WebhookStore {
  addEvent(app: string, json: string): Promise<void> | void;
  /** Apps with events waiting for a batch, with how many. */
  waiting(): Promise<Map<string, number>> | Map<string, number>;
  formBatch(
    app: string,
    batchId: string,
    max: number,
    now: number,
  ): Promise<StoredBatch | undefined> | StoredBatch | undefined;
  /** A batch of given event texts, stored at once (the test webhook). */
  addBatch(app: string, batchId: string, events: string[], now: number): Promise<StoredBatch> | StoredBatch;
  due(now: number, limit: number): Promise<StoredBatch[]> | StoredBatch[];
  get(id: string): Promise<StoredBatch | undefined> | StoredBatch | undefined;
  /** Newest first. */
  list(app: string, limit: number): Promise<StoredBatch[]> | StoredBatch[];
  saveTry(batch: StoredBatch): Promise<void> | void;
  /** Removes batches done before `before`; returns how many. */
  prune(before: number): Promise<number> | number;
  close(): Promise<void> | void;
}
