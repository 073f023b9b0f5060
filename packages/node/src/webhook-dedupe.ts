import { LIMITS } from '@realtime/protocol';

/**
 * Remembers webhook event ids so that a repeat is dropped. Delivery is at least once: a batch is tried
 * again when the answer was not 2xx in time, and may be resent by hand, always with the same event ids.
 *
 * `seen(id)` records the id and tells whether it was recorded before; it must do both in one atomic
 * step, so that two copies of a batch handled at once cannot both take an event. `forget(id)` removes an
 * id again: the webhook handlers call it for the events of a batch whose `onEvents` failed, so that the
 * service's next try delivers them instead of dropping them as repeats.
 *
 * @example
 * // Shared by several processes, with Redis (ioredis):
 * const dedupe: WebhookDeduplicator = {
 *   async seen(id) {
 *     return (await redis.set(`rt:webhook:${id}`, '1', 'PX', DEFAULT_DEDUPE_TTL_MS, 'NX')) === null;
 *   },
 *   async forget(id) {
 *     await redis.del(`rt:webhook:${id}`);
 *   },
 * };
 */
export interface WebhookDeduplicator {
  /** Records `id`; true when it was already recorded (a repeat), false when it is new. */
  seen(id: string): boolean | Promise<boolean>;
  /** Removes `id`, so that its next delivery counts as new. */
  forget(id: string): void | Promise<void>;
}

/**
 * Default time an id is kept: 4 days. Covers the three days a batch may be resent after its retries,
 * plus the up to 24 hours of retries themselves. (The contract asks for "a day"; that is too short once
 * resends are counted.)
 */
export const DEFAULT_DEDUPE_TTL_MS = LIMITS.webhookResendWindowMs + LIMITS.webhookGiveUpMs;

/** Default most ids kept by a {@link MemoryDeduplicator}: about 100 MB at worst. */
export const DEFAULT_DEDUPE_MAX_IDS = 1_000_000;

/** Options of {@link MemoryDeduplicator}. */
export interface MemoryDeduplicatorOptions {
  /** How long an id is kept after it was first seen, in milliseconds; default 4 days. */
  ttlMs?: number | undefined;
  /**
   * The most ids kept; when more come, the oldest are dropped before their time (a repeat of those
   * would then be delivered again). Default 1,000,000.
   */
  maxIds?: number | undefined;
  /** Clock in milliseconds since the epoch, for tests; default `Date.now`. */
  now?: (() => number) | undefined;
}

/**
 * Event ids in this process's memory. Keeps ids for at least the resend window (4 days by default,
 * counted from when the id was first seen), up to `maxIds`. Expired ids are dropped as new ones come
 * (amortised: no timer per id). Ids are lost when the process ends and not shared between processes:
 * run several processes, or need repeats dropped across restarts, and pass a shared store instead
 * (see {@link WebhookDeduplicator}).
 *
 * @example
 * const dedupe = new MemoryDeduplicator({ ttlMs: 4 * 24 * 3_600_000 });
 * dedupe.seen('w1'); // false: new
 * dedupe.seen('w1'); // true: a repeat
 */
export class MemoryDeduplicator implements WebhookDeduplicator {
  readonly #ttlMs: number;
  readonly #maxIds: number;
  readonly #now: () => number;
  /** Id to the time it expires. A Map keeps insertion order, which is the order of first sight. */
  readonly #ids = new Map<string, number>();

  constructor(options: MemoryDeduplicatorOptions = {}) {
    const { ttlMs = DEFAULT_DEDUPE_TTL_MS, maxIds = DEFAULT_DEDUPE_MAX_IDS, now = Date.now } = options;
    if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) {
      throw new TypeError('`ttlMs` must be a positive number of milliseconds');
    }
    if (!Number.isInteger(maxIds) || maxIds < 1) throw new TypeError('`maxIds` must be a whole number of at least 1');
    if (typeof now !== 'function') throw new TypeError('`now` must be a function returning milliseconds');
    this.#ttlMs = ttlMs;
    this.#maxIds = maxIds;
    this.#now = now;
  }

  /** How many ids are kept now (expired ones may still count until the next call to `seen`). */
  get size(): number {
    return this.#ids.size;
  }

  seen(id: string): boolean {
    const now = this.#now();
    this.#dropExpired(now);
    const expires = this.#ids.get(id);
    if (expires !== undefined && expires > now) return true;
    // Deleted first so that a re-recorded id moves to the end, keeping the order of expiry.
    this.#ids.delete(id);
    this.#ids.set(id, now + this.#ttlMs);
    while (this.#ids.size > this.#maxIds) this.#dropOldest();
    return false;
  }

  forget(id: string): void {
    this.#ids.delete(id);
  }

  /** Drops the expired ids at the front: each id is dropped once, so the cost per call is constant on average. */
  #dropExpired(now: number): void {
    for (const [id, expires] of this.#ids) {
      if (expires > now) return;
      this.#ids.delete(id);
    }
  }

  #dropOldest(): void {
    const oldest = this.#ids.keys().next();
    if (!oldest.done) this.#ids.delete(oldest.value);
  }
}
