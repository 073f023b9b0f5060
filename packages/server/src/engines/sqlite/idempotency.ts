import type { IdempotencyStore, Reservation } from '../idempotency-store.js';
import type { Db } from './db.js';
import { withStoreErrors } from './sqlite-error.js';

// `answer` NULL: the request is in flight.
const TABLE = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  app TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  answer TEXT,
  until_ms INTEGER NOT NULL,
  PRIMARY KEY (app, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_keys_until ON idempotency_keys (until_ms)`;

/**
 * Idempotency keys in the SQLite file: a retry after a restart of the embedded service still finds
 * its key. Ended rows are dropped as keys are reserved.
 */
export class SqliteIdempotencyStore implements IdempotencyStore {
  readonly #db: Db;
  readonly #prune;
  readonly #find;
  readonly #put;
  readonly #complete;
  readonly #release;

  constructor(db: Db) {
    db.exec(TABLE);
    this.#db = db;
    this.#prune = db.prepare('DELETE FROM idempotency_keys WHERE until_ms <= ?');
    this.#find = db.prepare<[string, string], { fingerprint: string; answer: string | null; until_ms: number }>(
      'SELECT fingerprint, answer, until_ms FROM idempotency_keys WHERE app = ? AND key = ?',
    );
    this.#put = db.prepare(
      'INSERT OR REPLACE INTO idempotency_keys (app, key, fingerprint, answer, until_ms) VALUES (?, ?, ?, NULL, ?)',
    );
    this.#complete = db.prepare(
      `UPDATE idempotency_keys SET answer = ?, until_ms = ?
       WHERE app = ? AND key = ? AND fingerprint = ? AND answer IS NULL AND until_ms > ?`,
    );
    this.#release = db.prepare(
      'DELETE FROM idempotency_keys WHERE app = ? AND key = ? AND fingerprint = ? AND answer IS NULL',
    );
  }

  readonly reserve = withStoreErrors(
    (app: string, key: string, fingerprint: string, holdUntilMs: number, nowMs: number): Reservation =>
      this.#db
        .transaction((): Reservation => {
          this.#prune.run(nowMs);
          const found = this.#find.get(app, key);
          if (found === undefined || found.until_ms <= nowMs) {
            this.#put.run(app, key, fingerprint, holdUntilMs);
            return { state: 'reserved' };
          }
          if (found.fingerprint !== fingerprint) return { state: 'conflict' };
          return found.answer === null ? { state: 'in_flight' } : { state: 'answered', answer: found.answer };
        })
        .immediate(),
  );

  readonly complete = withStoreErrors(
    (app: string, key: string, fingerprint: string, answer: string, keepUntilMs: number, nowMs: number): void => {
      this.#complete.run(answer, keepUntilMs, app, key, fingerprint, nowMs);
    },
  );

  readonly release = withStoreErrors((app: string, key: string, fingerprint: string): void => {
    this.#release.run(app, key, fingerprint);
  });
}
