import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
