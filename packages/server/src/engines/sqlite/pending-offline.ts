import type { PendingOffline } from '../memory/presence.js';
import type { Db } from './db.js';

/** `user.offline` reports still to come when the service stopped, for the next start to take back. */
export function savePendingOffline(db: Db, pending: readonly PendingOffline[]): void {
  const insert = db.prepare('INSERT OR REPLACE INTO pending_offline (app, user, due_at) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (const { app, user, dueAt } of pending) insert.run(app, user, dueAt);
  })();
}

/** Reads and forgets what a previous run left. */
export function takePendingOffline(db: Db): PendingOffline[] {
  return db.transaction(() => {
    const rows = db
      .prepare<[], { app: string; user: string; due_at: number }>('SELECT app, user, due_at FROM pending_offline')
      .all();
    db.prepare('DELETE FROM pending_offline').run();
    return rows.map((row) => ({ app: row.app, user: row.user, dueAt: row.due_at }));
  })();
}
