import type { AppRevocations, RevocationStore, RevokeOutcome } from '../revocation-store.js';
import type { Db } from './db.js';
import { withStoreErrors } from './sqlite-error.js';

// `user` '' is the app-wide revocation: user ids are 1 to 200 bytes, never empty.
const TABLE = `
CREATE TABLE IF NOT EXISTS token_revocations (
  app TEXT NOT NULL,
  user TEXT NOT NULL,
  before_ms INTEGER NOT NULL,
  until_ms INTEGER NOT NULL,
  PRIMARY KEY (app, user)
) WITHOUT ROWID`;

/** Revocations in the SQLite file: kept across restarts, as the tokens they refuse may be. */
export class SqliteRevocationStore implements RevocationStore {
  readonly #db: Db;
  readonly #prune;
  readonly #count;
  readonly #has;
  readonly #upsert;
  readonly #read;

  constructor(db: Db) {
    db.exec(TABLE);
    this.#db = db;
    this.#prune = db.prepare('DELETE FROM token_revocations WHERE app = ? AND until_ms <= ?');
    this.#count = db.prepare<[string], { n: number }>(
      "SELECT count(*) AS n FROM token_revocations WHERE app = ? AND user != ''",
    );
    this.#has = db.prepare<[string, string], { user: string }>(
      'SELECT user FROM token_revocations WHERE app = ? AND user = ?',
    );
    this.#upsert = db.prepare(
      `INSERT INTO token_revocations (app, user, before_ms, until_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (app, user) DO UPDATE SET before_ms = max(before_ms, excluded.before_ms),
         until_ms = max(until_ms, excluded.until_ms)`,
    );
    this.#read = db.prepare<[string, number], { user: string; before_ms: number }>(
      'SELECT user, before_ms FROM token_revocations WHERE app = ? AND until_ms > ?',
    );
  }

  readonly revoke = withStoreErrors(
    (
      app: string,
      user: string | undefined,
      beforeMs: number,
      keepUntilMs: number,
      maxUsers: number,
      nowMs: number,
    ): RevokeOutcome =>
      this.#db
        .transaction((): RevokeOutcome => {
          this.#prune.run(app, nowMs);
          const name = user ?? '';
          if (user !== undefined && this.#has.get(app, name) === undefined) {
            if ((this.#count.get(app)?.n ?? 0) >= maxUsers) return 'full';
          }
          this.#upsert.run(app, name, beforeMs, keepUntilMs);
          return 'stored';
        })
        .immediate(),
  );

  readonly read = withStoreErrors((app: string, nowMs: number): AppRevocations => {
    let whole: number | undefined;
    const users = new Map<string, number>();
    for (const row of this.#read.all(app, nowMs)) {
      if (row.user === '') whole = row.before_ms;
      else users.set(row.user, row.before_ms);
    }
    return { app: whole, users };
  });
}
