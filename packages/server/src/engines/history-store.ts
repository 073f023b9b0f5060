import type { HistoryRule } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';

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

/** How many events a room keeps now, and the epoch of its stream. */
export interface KeptCount {
  count: number;
  epoch: string;
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
 * - `count` answers what `last` of every kept event would hold, without reading them.
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
  /**
   * How many events the room keeps now (what aged out is dropped first, as a read does) and its epoch:
   * the epoch a `last` or `since` read at the same moment would name. Reads no event.
   */
  count(app: string, room: string, nowMs: number): MaybePromise<KeptCount>;
  /** Removes events past their age everywhere; returns how many went. */
  prune(nowMs: number): Promise<number> | number;
  /**
   * Drops every room of the app (a deleted app): its kept events and what the rooms remember of their
   * ids. An app made again with the key finds its rooms empty. Other apps' rooms are untouched.
   */
  removeApp(app: string, nowMs: number): MaybePromise<void>;
  close(): Promise<void> | void;
}
