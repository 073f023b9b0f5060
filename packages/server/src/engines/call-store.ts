import type { MaybePromise } from './maybe-promise.js';

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

/**
 * Calls, counted over every node. Contract:
 * - A user is in at most one call at a time (ringing or answered), as caller or callee.
 * - Each change that ends a call (`end`, `takeMissed`, `takeNode`) hands the record to exactly one
 *   caller, so each `call.ended` is reported once, by one node.
 * - A call rings until `ringUntil` (the caller's clock), then ends `missed`; a call with a page on a
 *   node that died ends `failed`, taken by the node that claimed the dead one (NodeStore).
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
  /** Claims up to `limit` calls still ringing past `ringUntil` (`missed`); each is removed and handed out once. */
  takeMissed(nowMs: number, limit: number): MaybePromise<CallRecord[]>;
  /**
   * Claims up to `limit` calls with a page on `node` (a dead node: they end `failed`); each is removed
   * and handed out once. Fewer than `limit`: the node has none left.
   */
  takeNode(node: string, limit: number): MaybePromise<CallRecord[]>;
  close(): MaybePromise<void>;
}
