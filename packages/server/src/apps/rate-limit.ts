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
 * every node. A request takes one token; tokens refill at `perSecond` up to `burst`. On a Redis
 * Cluster the bucket is split in a few (see the constructor): the total stays the app's limit, and
 * as requests go to the buckets in turn, each refuses about when the whole would.
 */
/** Most buckets an app's API limit is split into on a Redis Cluster. */
const MAX_SHARDS = 8;
/** Fewest tokens a split bucket holds (burst) and gets a second (rate): smaller limits stay whole. */
const MIN_SHARE = 8;

export class RateLimiter {
  readonly #store: LimitStore;
  readonly #local: LimitStore | undefined;
  readonly #shards: number;
  /** Per app, the bucket this node takes from next (round robin over the app's buckets). */
  readonly #next = new Map<string, number>();

  /**
   * `local`: on a Redis Cluster, a store of this node's own that counts an app's requests while the
   * shard holding the app's bucket does not answer (a failover), so requests for rooms of the other
   * shards go on; each node then allows the app's rate by itself for those seconds. Without it (one
   * Redis, where nothing else answers either), such a request answers 503.
   */
  /**
   * `shards` (a Redis Cluster): an app's limit is split over that many buckets under their own hash
   * tags (each with its share of the rate and burst), taken in turn, so one app's requests spread
   * over the shards instead of all reading one key; a limit too small to split stays one bucket.
   */
  constructor(store: LimitStore, options: { local?: LimitStore; shards?: number } = {}) {
    this.#store = store;
    this.#local = options.local;
    this.#shards = Math.max(1, Math.min(MAX_SHARDS, Math.floor(options.shards ?? 1)));
  }

  /** The bucket to take from and its share of the limit. */
  #bucket(app: string, limit: RateLimit): { key: string; perSecond: number; burst: number } {
    const shards = Math.min(this.#shards, Math.floor(limit.burst / MIN_SHARE), Math.floor(limit.perSecond / MIN_SHARE));
    if (shards <= 1) return { key: `api:${app}`, perSecond: limit.perSecond, burst: limit.burst };
    const i = (this.#next.get(app) ?? 0) % shards;
    if (this.#next.size >= 10_000) this.#next.clear();
    this.#next.set(app, i + 1);
    return { key: `api:{${app}:${i}}`, perSecond: limit.perSecond / shards, burst: limit.burst / shards };
  }

  /**
   * Takes a token: 0 when allowed, else the whole seconds until one is back (at least 1). At once
   * on a store that answers at once (the embedded engine's): no promise on the request's path.
   */
  take(app: string, limit: RateLimit, nowMs: number): MaybePromise<number> {
    const { key, perSecond, burst } = this.#bucket(app, limit);
    const wait = this.#store.take(key, perSecond, burst, nowMs);
    if (typeof wait === 'number') return toSeconds(wait);
    const local = this.#local;
    if (!local) return wait.then(toSeconds);
    return wait.then(toSeconds, async (error: unknown) => {
      if (!(error instanceof StoreError) || error.kind !== 'unavailable') throw error;
      return toSeconds(await local.take(`api:${app}`, limit.perSecond, limit.burst, nowMs));
    });
  }
}
