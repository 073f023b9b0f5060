/** The limit contract on the embedded engine with every call answering on a later turn (asyncEngine). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from './async-engine.js';
import { limitsContract } from './contract/limits.contract.js';
import { openEmbeddedEngine } from './embedded.js';

limitsContract('embedded engine, answering later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-async-limits-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
  return {
    store: asyncEngine(engine).limits,
    cleanup: async () => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
