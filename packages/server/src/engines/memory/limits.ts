import type { LimitStore } from '../types.js';

interface Bucket {
  tokens: number;
  /** The newest time the bucket was given: refills count from here. */
  at: number;
}

/**
 * Limits in this process's memory: the embedded engine's, where one process is every node. Answers
 * at once (no promise): the rate limit is on every API request's path.
 */
export class MemoryLimitStore implements LimitStore {
  readonly #buckets = new Map<string, Bucket>();
  /** Held slots per key: slot -> when it ends. */
  readonly #slots = new Map<string, Map<string, number>>();

  take(key: string, perSecond: number, burst: number, nowMs: number): number {
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = { tokens: burst, at: nowMs };
      this.#buckets.set(key, bucket);
    } else if (nowMs > bucket.at) {
      bucket.tokens = Math.min(burst, bucket.tokens + ((nowMs - bucket.at) / 1000) * perSecond);
      bucket.at = nowMs;
    } else {
      // A clock behind the bucket's (stepped back, or another node's): no refill, nothing taken away.
      bucket.tokens = Math.min(burst, bucket.tokens);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    if (perSecond <= 0) return Number.POSITIVE_INFINITY;
    return Math.max(1, Math.ceil(bucket.at - nowMs + ((1 - bucket.tokens) * 1000) / perSecond));
  }

  acquire(key: string, slot: string, max: number, ttlMs: number, nowMs: number): boolean {
    let held = this.#slots.get(key);
    if (!held) {
      held = new Map();
      this.#slots.set(key, held);
    }
    if (!held.has(slot) && held.size >= max) {
      // Only when full: slots that ended (never released) make room.
      for (const [other, until] of held) if (until <= nowMs) held.delete(other);
      if (held.size >= max) {
        if (held.size === 0) this.#slots.delete(key);
        return false;
      }
    }
    held.set(slot, nowMs + ttlMs);
    return true;
  }

  release(key: string, slot: string): void {
    const held = this.#slots.get(key);
    if (!held) return;
    held.delete(slot);
    if (held.size === 0) this.#slots.delete(key);
  }
}
