import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export type Db = Database.Database;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS apps (
  key TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  name TEXT NOT NULL,
  webhook TEXT NOT NULL DEFAULT '',
  features TEXT NOT NULL,
  rate_per_second REAL NOT NULL,
  rate_burst REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rooms (
  app TEXT NOT NULL,
  room TEXT NOT NULL,
  last_ms INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  dropped_ms INTEGER NOT NULL DEFAULT -1,
  dropped_seq INTEGER NOT NULL DEFAULT -1,
  PRIMARY KEY (app, room)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS history (
  app TEXT NOT NULL,
  room TEXT NOT NULL,
  ms INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  data TEXT NOT NULL,
  sender TEXT,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (app, room, ms, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS history_expiry ON history (expires_at);
CREATE TABLE IF NOT EXISTS pending_offline (
  app TEXT NOT NULL,
  user TEXT NOT NULL,
  due_at INTEGER NOT NULL,
  PRIMARY KEY (app, user)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS webhook_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  app TEXT NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_events_app ON webhook_events (app, seq);
CREATE TABLE IF NOT EXISTS webhook_batches (
  id TEXT PRIMARY KEY,
  app TEXT NOT NULL,
  body TEXT NOT NULL,
  events INTEGER NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  status INTEGER NOT NULL DEFAULT 0,
  error TEXT,
  created_at INTEGER NOT NULL,
  first_try_at INTEGER,
  at INTEGER,
  next_at INTEGER,
  done_at INTEGER,
  seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_batches_due ON webhook_batches (next_at) WHERE next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS webhook_batches_app ON webhook_batches (app, seq);
CREATE INDEX IF NOT EXISTS webhook_batches_done ON webhook_batches (done_at) WHERE done_at IS NOT NULL;
`;

/** Opens (creating when needed) the service database in the data folder: WAL, one file. */
export function openDb(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(join(dataDir, 'realtime.db'));
  db.pragma('journal_mode = WAL');
  // NORMAL in WAL mode is durable across process crashes; only an OS crash may lose the last commits.
  db.pragma('synchronous = NORMAL');
  // The CLI may write while the server runs.
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);
  // Made once with the file (every later open, the CLI's too, keeps the first): see dbEpoch.
  const made =
    db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('epoch', ?)").run(randomBytes(12).toString('base64url'))
      .changes === 1;
  // Where the file's id streams began: '' until the first history call of a new file stamps it in
  // that call's clock (SqliteHistoryStore); '0' for a file made before this was kept (no mark).
  db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('began', ?)").run(made ? '' : '0');
  return db;
}

/**
 * The file's epoch: random, made with the file and kept as long as the file is. The rooms' id
 * streams live and die with the file (a deleted or replaced file starts them all over), so one
 * epoch for the file names all of them.
 */
export function dbEpoch(db: Db): string {
  const row = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'epoch'").get();
  if (!row) throw new Error('the database has no epoch: open it with openDb');
  return row.value;
}
