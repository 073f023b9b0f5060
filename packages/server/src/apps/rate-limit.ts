import type { RateLimit } from '../engines/types.js';

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets per app, in this process's memory: a request takes one token; tokens refill at
 * `perSecond` up to `burst`. Answers how many seconds to wait when empty.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();

  /** Takes a token; returns 0 when allowed, else the whole seconds until one is available (at least 1). */
  take(app: string, limit: RateLimit, nowMs: number): number {
    let bucket = this.#buckets.get(app);
    if (!bucket) {
      bucket = { tokens: limit.burst, at: nowMs };
      this.#buckets.set(app, bucket);
    } else {
      // A clock that stepped back refills nothing, but takes nothing away either.
      const elapsedMs = Math.max(0, nowMs - bucket.at);
      bucket.tokens = Math.min(limit.burst, bucket.tokens + (elapsedMs / 1000) * limit.perSecond);
      bucket.at = nowMs;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    if (limit.perSecond <= 0) return 60;
    return Math.max(1, Math.ceil((1 - bucket.tokens) / limit.perSecond));
  }
}
