import type { MaybePromise } from './maybe-promise.js';

/**
 * What a reserve found under an Idempotency-Key: nothing (the caller now holds it and does the
 * work), a request with the same body still in flight, the stored answer of one with the same body,
 * or a request with another body (held or answered).
 */
export type Reservation =
  | { state: 'reserved' }
  | { state: 'in_flight' }
  | { state: 'answered'; answer: string }
  | { state: 'conflict' };

/**
 * Idempotency keys of API requests, shared by every node: a key is reserved before its request is
 * served, then holds the answer, so a retry (on any node) gets the answer instead of a second
 * delivery. Keys are per app; `fingerprint` stands for the request (route and body). Contract:
 * - `reserve` is one atomic step: of concurrent reserves of a free key exactly one answers
 *   'reserved'. A reservation holds until `holdUntilMs`, an answer until `keepUntilMs` of `complete`;
 *   past those the key is free again. Times are the caller's clock (`nowMs`).
 * - `owner` is the reserving request's own token (random, never used twice). `complete` stores the
 *   answer of the reservation that owner made; `release` frees it (the request failed and delivered
 *   nothing, so a retry may try again). Both do nothing when the key is not held by that owner: its
 *   hold ended and another request, with the same body or not, holds it now or has answered.
 * - One record per key: on Redis Cluster a key's record lives in one slot.
 */
export interface IdempotencyStore {
  reserve(
    app: string,
    key: string,
    fingerprint: string,
    owner: string,
    holdUntilMs: number,
    nowMs: number,
  ): MaybePromise<Reservation>;
  complete(
    app: string,
    key: string,
    owner: string,
    answer: string,
    keepUntilMs: number,
    nowMs: number,
  ): MaybePromise<void>;
  release(app: string, key: string, owner: string): MaybePromise<void>;
}
