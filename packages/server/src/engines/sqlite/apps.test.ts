import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
