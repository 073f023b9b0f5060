import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { historyContract } from '../contract/history.contract.js';
import { openDb } from './db.js';
import { SqliteHistoryStore } from './history.js';

historyContract('SqliteHistoryStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-history-'));
  let db = openDb(dir);
  return {
    store: new SqliteHistoryStore(db),
    // A restart: close the file and open it again.
    reopen: async () => {
      db.close();
      db = openDb(dir);
      return new SqliteHistoryStore(db);
    },
    cleanup: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
