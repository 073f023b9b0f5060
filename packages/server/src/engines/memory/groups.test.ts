import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from '../async-engine.js';
import { groupStoreContract } from '../contract/groups.contract.js';
import { openEmbeddedEngine } from '../embedded.js';
import { MemoryGroupStore } from './groups.js';

groupStoreContract('MemoryGroupStore', async () => ({ store: new MemoryGroupStore(), cleanup: async () => {} }));

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// calls interleave as they would over a network.
groupStoreContract('embedded engine, answering later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-async-groups-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
  return {
    store: asyncEngine(engine).groups,
    cleanup: async () => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
