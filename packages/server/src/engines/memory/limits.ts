import { refill } from '../token-bucket.js';
import type { LimitStore } from '../types.js';

interface Bucket {
  tokens: number;
  /** The newest time the bucket was given: refills count from here. */
  at: number;
}

/** The bucket as of `nowMs`, a new object (`take` stores it, `peek` drops it). A missing one is full. */
function refilled(bucket: Bucket | undefined, perSecond: number, burst: number, nowMs: number): Bucket {
  if (!bucket) return { tokens: burst, at: nowMs };
  return { tokens: refill(bucket.tokens, bucket.at, nowMs, perSecond, burst), at: Math.max(nowMs, bucket.at) };
}

/** 0 when the bucket holds a token, else the whole ms until it does (Infinity when it never refills). */
function waitFor(bucket: Bucket, perSecond: number, nowMs: number): number {
  if (bucket.tokens >= 1) return 0;
  if (perSecond <= 0) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.ceil(bucket.at - nowMs + ((1 - bucket.tokens) * 1000) / perSecond));
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
    const bucket = refilled(this.#buckets.get(key), perSecond, burst, nowMs);
    const wait = waitFor(bucket, perSecond, nowMs);
    if (wait === 0) bucket.tokens -= 1;
    this.#buckets.set(key, bucket);
    return wait;
  }

  peek(key: string, perSecond: number, burst: number, nowMs: number): number {
    return waitFor(refilled(this.#buckets.get(key), perSecond, burst, nowMs), perSecond, nowMs);
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
