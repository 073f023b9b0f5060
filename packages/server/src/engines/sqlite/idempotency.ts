import type { IdempotencyStore, Reservation } from '../idempotency-store.js';
import type { Db } from './db.js';
import { withStoreErrors } from './sqlite-error.js';

// `answer` NULL: the request is in flight. `owner`: the reserving request's token.
const TABLE = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  app TEXT NOT NULL,
  key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  owner TEXT NOT NULL DEFAULT '',
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
    addOwnerColumn(db);
    this.#db = db;
    this.#prune = db.prepare('DELETE FROM idempotency_keys WHERE until_ms <= ?');
    this.#find = db.prepare<[string, string], { fingerprint: string; answer: string | null; until_ms: number }>(
      'SELECT fingerprint, answer, until_ms FROM idempotency_keys WHERE app = ? AND key = ?',
    );
    this.#put = db.prepare(
      'INSERT OR REPLACE INTO idempotency_keys (app, key, fingerprint, owner, answer, until_ms) VALUES (?, ?, ?, ?, NULL, ?)',
    );
    this.#complete = db.prepare(
      `UPDATE idempotency_keys SET answer = ?, until_ms = ?
       WHERE app = ? AND key = ? AND owner = ? AND answer IS NULL AND until_ms > ?`,
    );
    this.#release = db.prepare(
      'DELETE FROM idempotency_keys WHERE app = ? AND key = ? AND owner = ? AND answer IS NULL',
    );
  }

  readonly reserve = withStoreErrors(
    (app: string, key: string, fingerprint: string, owner: string, holdUntilMs: number, nowMs: number): Reservation =>
      this.#db
        .transaction((): Reservation => {
          this.#prune.run(nowMs);
          const found = this.#find.get(app, key);
          if (found === undefined || found.until_ms <= nowMs) {
            this.#put.run(app, key, fingerprint, owner, holdUntilMs);
            return { state: 'reserved' };
          }
          if (found.fingerprint !== fingerprint) return { state: 'conflict' };
          return found.answer === null ? { state: 'in_flight' } : { state: 'answered', answer: found.answer };
        })
        .immediate(),
  );

  readonly complete = withStoreErrors(
    (app: string, key: string, owner: string, answer: string, keepUntilMs: number, nowMs: number): void => {
      this.#complete.run(answer, keepUntilMs, app, key, owner, nowMs);
    },
  );

  readonly release = withStoreErrors((app: string, key: string, owner: string): void => {
    this.#release.run(app, key, owner);
  });
}

/**
 * Adds `owner` to a file made before it (its rows keep '': their requests are gone with the process
 * that held them, so nothing completes or releases them; they end at their hold). Two processes
 * opening the file at once may both try: the loser finds it.
 */
function addOwnerColumn(db: Db): void {
  const has = () =>
    db
      .prepare<[], { name: string }>('PRAGMA table_info(idempotency_keys)')
      .all()
      .some((c) => c.name === 'owner');
  if (has()) return;
  try {
    db.exec(`ALTER TABLE idempotency_keys ADD COLUMN owner TEXT NOT NULL DEFAULT ''`);
  } catch (error) {
    if (!has()) throw error;
  }
}
