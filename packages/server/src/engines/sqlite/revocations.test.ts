import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { revocationsContract } from '../contract/revocations.contract.js';
import { type Db, openDb } from './db.js';
import { SqliteRevocationStore } from './revocations.js';

revocationsContract('SqliteRevocationStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-revocations-'));
  const dbs: Db[] = [openDb(dir), openDb(dir)];
  return {
    store: new SqliteRevocationStore(dbs[0] as Db),
    // Another connection to the same file, as another process has.
    peer: new SqliteRevocationStore(dbs[1] as Db),
    reopen: async () => {
      for (const db of dbs) db.close();
      const db = openDb(dir);
      dbs.push(db);
      return new SqliteRevocationStore(db);
    },
    cleanup: async () => {
      for (const db of dbs) if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
