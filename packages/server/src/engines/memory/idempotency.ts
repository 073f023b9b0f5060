import type { IdempotencyStore, Reservation } from '../idempotency-store.js';

interface Record {
  fingerprint: string;
  owner: string;
  /** Undefined while the request is in flight. */
  answer: string | undefined;
  until: number;
}

/** Idempotency keys in this process's memory: ended records are dropped as new keys come. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #records = new Map<string, Record>();

  reserve(
    app: string,
    key: string,
    fingerprint: string,
    owner: string,
    holdUntilMs: number,
    nowMs: number,
  ): Reservation {
    this.#prune(nowMs);
    const id = recordId(app, key);
    const found = this.#records.get(id);
    if (found === undefined || found.until <= nowMs) {
      this.#records.set(id, { fingerprint, owner, answer: undefined, until: holdUntilMs });
      return { state: 'reserved' };
    }
    if (found.fingerprint !== fingerprint) return { state: 'conflict' };
    return found.answer === undefined ? { state: 'in_flight' } : { state: 'answered', answer: found.answer };
  }

  complete(app: string, key: string, owner: string, answer: string, keepUntilMs: number, nowMs: number): void {
    const found = this.#records.get(recordId(app, key));
    if (found?.owner !== owner || found.answer !== undefined || found.until <= nowMs) return;
    found.answer = answer;
    found.until = keepUntilMs;
  }

  release(app: string, key: string, owner: string): void {
    const id = recordId(app, key);
    const found = this.#records.get(id);
    if (found?.owner === owner && found.answer === undefined) this.#records.delete(id);
  }

  /** Drops ended records from the oldest: a Map keeps insertion order, and ends rise with it mostly. */
  #prune(nowMs: number): void {
    for (const [id, record] of this.#records) {
      if (record.until > nowMs) break;
      this.#records.delete(id);
    }
  }
}

/** App keys hold no ':'; the key follows whole. */
function recordId(app: string, key: string): string {
  return `${app}:${key}`;
}
