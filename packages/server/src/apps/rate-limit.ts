import { StoreError } from '../engines/store-error.js';
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
  readonly #local: LimitStore | undefined;

  /**
   * `local`: on a Redis Cluster, a store of this node's own that counts an app's requests while the
   * shard holding the app's bucket does not answer (a failover), so requests for rooms of the other
   * shards go on; each node then allows the app's rate by itself for those seconds. Without it (one
   * Redis, where nothing else answers either), such a request answers 503.
   */
  constructor(store: LimitStore, options: { local?: LimitStore } = {}) {
    this.#store = store;
    this.#local = options.local;
  }

  /**
   * Takes a token: 0 when allowed, else the whole seconds until one is back (at least 1). At once
   * on a store that answers at once (the embedded engine's): no promise on the request's path.
   */
  take(app: string, limit: RateLimit, nowMs: number): MaybePromise<number> {
    const key = `api:${app}`;
    const wait = this.#store.take(key, limit.perSecond, limit.burst, nowMs);
    if (typeof wait === 'number') return toSeconds(wait);
    const local = this.#local;
    if (!local) return wait.then(toSeconds);
    return wait.then(toSeconds, async (error: unknown) => {
      if (!(error instanceof StoreError) || error.kind !== 'unavailable') throw error;
      return toSeconds(await local.take(key, limit.perSecond, limit.burst, nowMs));
    });
  }
}
