import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { idempotencyContract } from '../contract/idempotency.contract.js';
import { type Db, openDb } from './db.js';
import { SqliteIdempotencyStore } from './idempotency.js';

idempotencyContract('SqliteIdempotencyStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-idempotency-'));
  const dbs: Db[] = [openDb(dir), openDb(dir)];
  return {
    store: new SqliteIdempotencyStore(dbs[0] as Db),
    // Another connection to the same file, as another process has.
    peer: new SqliteIdempotencyStore(dbs[1] as Db),
    cleanup: async () => {
      for (const db of dbs) if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteIdempotencyStore on a file made before owners', () => {
  it('adds the owner column and keeps the keys there: an answered one answers, a held one ends at its hold', () => {
    const dir = mkdtempSync(join(tmpdir(), 'realtime-idempotency-old-'));
    try {
      const old = openDb(dir);
      old.exec(`CREATE TABLE idempotency_keys (
        app TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, answer TEXT, until_ms INTEGER NOT NULL,
        PRIMARY KEY (app, key)) WITHOUT ROWID`);
      old.exec(
        `INSERT INTO idempotency_keys VALUES ('a', 'done', 'f', '{"ok":1}', 9000), ('a', 'held', 'f', NULL, 2000)`,
      );
      old.close();
      const db = openDb(dir);
      const store = new SqliteIdempotencyStore(db);
      const columns = db
        .prepare<[], { name: string }>('PRAGMA table_info(idempotency_keys)')
        .all()
        .map((c) => c.name);
      expect(columns).toContain('owner');
      // A second store on the file finds the column there.
      const other = openDb(dir);
      const again = new SqliteIdempotencyStore(other);
      expect(store.reserve('a', 'done', 'f', 'o1', 3000, 1000)).toEqual({ state: 'answered', answer: '{"ok":1}' });
      expect(again.reserve('a', 'held', 'f', 'o2', 3000, 1000)).toEqual({ state: 'in_flight' });
      // Its request is gone with the old process: no request of now releases it; it ends at its hold.
      store.release('a', 'held', 'o2');
      expect(store.reserve('a', 'held', 'f', 'o3', 4000, 1999)).toEqual({ state: 'in_flight' });
      expect(store.reserve('a', 'held', 'f', 'o3', 4000, 2000)).toEqual({ state: 'reserved' });
      other.close();
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
