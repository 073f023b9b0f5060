import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from '../async-engine.js';
import { nodeStoreContract } from '../contract/nodes.contract.js';
import { openEmbeddedEngine } from '../embedded.js';
import { MemoryNodeStore } from './nodes.js';

nodeStoreContract('MemoryNodeStore', async () => ({ store: new MemoryNodeStore(), cleanup: async () => {} }));

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// claims interleave as they would over a network.
nodeStoreContract('embedded engine, answering later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-async-nodes-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
  return {
    store: asyncEngine(engine).nodes,
    cleanup: async () => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
