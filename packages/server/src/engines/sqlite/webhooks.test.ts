import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { webhookContract } from '../contract/webhooks.contract.js';
import { openDb } from './db.js';
import { SqliteWebhookStore } from './webhooks.js';

webhookContract('SqliteWebhookStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-webhooks-'));
  let db = openDb(dir);
  // The peer: a second connection to the file, as a second process would open it.
  const other = openDb(dir);
  const store = new SqliteWebhookStore(db);
  return {
    store,
    peer: new SqliteWebhookStore(other),
    // A restart: close the file and open it again.
    reopen: async () => {
      db.close();
      db = openDb(dir);
      return new SqliteWebhookStore(db);
    },
    cleanup: async () => {
      db.close();
      other.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteWebhookStore on a file made before leases', () => {
  it('adds the lease columns and keeps the batches there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'realtime-webhooks-old-'));
    try {
      const old = openDb(dir);
      // As db.ts made the table before leases (should its schema gain them, they are dropped here).
      for (const { name } of old.prepare<[], { name: string }>('PRAGMA table_info(webhook_batches)').all()) {
        if (name.startsWith('lease_')) old.exec(`ALTER TABLE webhook_batches DROP COLUMN ${name}`);
      }
      old
        .prepare(
          `INSERT INTO webhook_batches (id, app, body, events, state, created_at, next_at, seq)
           VALUES ('b_old', 'app1', '{"events":[]}', 0, 'pending', 1, 1, 7)`,
        )
        .run();
      old.close();
      const db = openDb(dir);
      const store = new SqliteWebhookStore(db);
      // A second store on the file finds the columns there.
      const second = new Database(join(dir, 'realtime.db'));
      const again = new SqliteWebhookStore(second);
      expect((await store.claimDue(10, 5, { holder: 'n1', ms: 100 })).map((b) => b.id)).toEqual(['b_old']);
      expect(await again.claim('b_old', 20, { holder: 'n2', ms: 100 })).toBe('busy');
      db.close();
      second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
