import type { DeliveryError, DeliveryState } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';

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
 * - `formBatch` moves the oldest waiting events of an app (at most `max`, in order) into a new batch,
 *   with the exact body every try will send; the batch is due at once. Each event goes into one
 *   batch only, however many nodes form batches at once. A sharded store (Redis Cluster) keeps
 *   events in lists of their own slot (a room's reports, the app's other events): each list's order
 *   is kept, lists are merged by the events' `at`, and a node that dies while forming a batch leaves
 *   its events to the store's repair, never to two batches.
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
