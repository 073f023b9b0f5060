import type { DashboardSessionStore } from '../dashboard-session-store.js';
import type { Db } from './db.js';
import { withStoreErrors } from './sqlite-error.js';

const TABLE = `
CREATE TABLE IF NOT EXISTS dashboard_sessions (
  id TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) WITHOUT ROWID`;

/**
 * Dashboard sessions in the SQLite file: the signing secret in `meta` (made with the first sign-in,
 * then kept with the file, so a restart keeps every session), and a row per open session. Rows of
 * ended sessions are dropped as new ones open.
 */
export class SqliteDashboardSessionStore implements DashboardSessionStore {
  readonly #addSecret;
  readonly #secret;
  readonly #prune;
  readonly #open;
  readonly #isOpen;
  readonly #close;

  constructor(db: Db) {
    db.exec(TABLE);
    this.#addSecret = db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('dashboard_secret', ?)");
    this.#secret = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'dashboard_secret'");
    this.#prune = db.prepare('DELETE FROM dashboard_sessions WHERE expires_at <= ?');
    this.#open = db.prepare('INSERT OR REPLACE INTO dashboard_sessions (id, expires_at) VALUES (?, ?)');
    this.#isOpen = db.prepare<[string, number], { id: string }>(
      'SELECT id FROM dashboard_sessions WHERE id = ? AND expires_at > ?',
    );
    this.#close = db.prepare('DELETE FROM dashboard_sessions WHERE id = ?');
  }

  readonly signingSecret = withStoreErrors((candidate: Buffer): Buffer => {
    // INSERT OR IGNORE: the CLI or another process on the same file may have made it first.
    this.#addSecret.run(candidate.toString('base64url'));
    const row = this.#secret.get();
    if (!row) throw new Error('the dashboard secret was not kept');
    return Buffer.from(row.value, 'base64url');
  });

  readonly storedSecret = withStoreErrors((): Buffer | undefined => {
    const row = this.#secret.get();
    return row === undefined ? undefined : Buffer.from(row.value, 'base64url');
  });

  readonly open = withStoreErrors((id: string, expiresMs: number, nowMs: number): void => {
    this.#prune.run(nowMs);
    this.#open.run(id, expiresMs);
  });

  readonly isOpen = withStoreErrors((id: string, nowMs: number): boolean => this.#isOpen.get(id, nowMs) !== undefined);

  readonly close = withStoreErrors((id: string): void => {
    this.#close.run(id);
  });
}
