import type { MaybePromise } from './maybe-promise.js';

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
