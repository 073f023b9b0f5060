import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appStoreContract } from '../contract/apps.contract.js';
import { SqliteAppStore } from './apps.js';
import { type Db, openDb } from './db.js';

appStoreContract('SqliteAppStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-apps-'));
  const dbs: Db[] = [openDb(dir)];
  return {
    store: new SqliteAppStore(dbs[0] as Db),
    // The CLI's own connection to the same file.
    other: async () => {
      const db = openDb(dir);
      dbs.push(db);
      return new SqliteAppStore(db);
    },
    cleanup: async () => {
      for (const db of dbs) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteAppStore on a file made before rotations', () => {
  it('adds the rotation columns and keeps the apps there; a second store finds them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'realtime-apps-old-'));
    try {
      const old = openDb(dir);
      old.exec(`INSERT INTO apps (key, secret, name, webhook, features, rate_per_second, rate_burst)
                VALUES ('k1', 's1', 'One', '', '["history"]', 10, 20)`);
      old.close();
      // db.ts makes the table without the rotation columns: the store adds them.
      const db = openDb(dir);
      const columns = () =>
        db
          .prepare<[], { name: string }>('PRAGMA table_info(apps)')
          .all()
          .map((c) => c.name);
      expect(columns()).not.toContain('old_secret');
      const store = new SqliteAppStore(db);
      expect(columns()).toEqual(expect.arrayContaining(['old_secret', 'retires_at', 'signer']));
      expect(store.get('k1')).toEqual({
        key: 'k1',
        secret: 's1',
        name: 'One',
        webhook: '',
        features: ['history'],
        rateLimit: { perSecond: 10, burst: 20 },
      });
      const rotation = { oldSecret: 's1', retiresAt: 5, signer: 'new' as const };
      expect(store.setSecret('k1', 's2', rotation)).toBe(true);
      const again = openDb(dir);
      expect(new SqliteAppStore(again).get('k1')).toMatchObject({ secret: 's2', rotation });
      again.close();
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
