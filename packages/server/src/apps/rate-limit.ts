import type { LimitStore, MaybePromise, RateLimit } from '../engines/types.js';

/** What Retry-After says when the bucket never refills (rate 0): try again in a minute. */
const NEVER_SECONDS = 60;

function toSeconds(waitMs: number): number {
  if (waitMs === 0) return 0;
  if (!Number.isFinite(waitMs)) return NEVER_SECONDS;
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/**
 * The API rate limit: a token bucket per app in the engine's limit store, so it is counted over
 * every node. A request takes one token; tokens refill at `perSecond` up to `burst`.
 */
export class RateLimiter {
  readonly #store: LimitStore;

  constructor(store: LimitStore) {
    this.#store = store;
  }

  /**
   * Takes a token: 0 when allowed, else the whole seconds until one is back (at least 1). At once
   * on a store that answers at once (the embedded engine's): no promise on the request's path.
   */
  take(app: string, limit: RateLimit, nowMs: number): MaybePromise<number> {
    const wait = this.#store.take(`api:${app}`, limit.perSecond, limit.burst, nowMs);
    return typeof wait === 'number' ? toSeconds(wait) : wait.then(toSeconds);
  }
}
