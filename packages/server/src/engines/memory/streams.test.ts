import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from '../async-engine.js';
import { streamStoreContract } from '../contract/streams.contract.js';
import { openEmbeddedEngine } from '../embedded.js';
import { MemoryStreamStore } from './streams.js';

streamStoreContract('MemoryStreamStore', async () => ({ store: new MemoryStreamStore(), cleanup: async () => {} }));

// The embedded engine's store with every call answering on a later turn (asyncEngine), so racing
// calls interleave as they would over a network.
streamStoreContract('embedded engine, answering later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-async-streams-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
  return {
    store: asyncEngine(engine).streams,
    cleanup: async () => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
