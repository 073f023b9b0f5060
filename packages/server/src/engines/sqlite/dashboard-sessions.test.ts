import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dashboardSessionsContract } from '../contract/dashboard-sessions.contract.js';
import { SqliteDashboardSessionStore } from './dashboard-sessions.js';
import { type Db, openDb } from './db.js';

dashboardSessionsContract('SqliteDashboardSessionStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-dashboard-sessions-'));
  const dbs: Db[] = [openDb(dir), openDb(dir)];
  return {
    store: new SqliteDashboardSessionStore(dbs[0] as Db),
    // Another connection to the same file, as another process has.
    peer: new SqliteDashboardSessionStore(dbs[1] as Db),
    reopen: async () => {
      for (const db of dbs) db.close();
      const db = openDb(dir);
      dbs.push(db);
      return new SqliteDashboardSessionStore(db);
    },
    cleanup: async () => {
      for (const db of dbs) if (db.open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
