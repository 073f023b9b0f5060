import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from '../async-engine.js';
import { callStoreContract } from '../contract/calls.contract.js';
import { openEmbeddedEngine } from '../embedded.js';
import { MemoryCallStore } from './calls.js';

callStoreContract('MemoryCallStore', async () => ({ store: new MemoryCallStore(), cleanup: async () => {} }));

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// calls interleave as they would over a network.
callStoreContract('embedded engine, answering later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-async-calls-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
  return {
    store: asyncEngine(engine).calls,
    cleanup: async () => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
