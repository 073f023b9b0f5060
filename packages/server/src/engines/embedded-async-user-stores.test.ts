/** The revocation and idempotency contracts on the embedded engine with every call answering on a later turn. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from './async-engine.js';
import { idempotencyContract } from './contract/idempotency.contract.js';
import { revocationsContract } from './contract/revocations.contract.js';
import { openEmbeddedEngine } from './embedded.js';
import type { Engine } from './types.js';

const log = pino({ level: 'silent' });

function opened(name: string): { dir: string; engines: Engine[]; cleanup: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), `realtime-async-${name}-`));
  const engines = [openEmbeddedEngine({ dataDir: dir, log })];
  return {
    dir,
    engines,
    cleanup: async () => {
      for (const one of engines) await one.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

revocationsContract('embedded engine, answering later', async () => {
  const made = opened('revocations');
  return {
    store: asyncEngine(made.engines[0] as Engine).revocations,
    reopen: async () => {
      for (const one of made.engines) await one.close();
      const engine = openEmbeddedEngine({ dataDir: made.dir, log });
      made.engines.push(engine);
      return asyncEngine(engine).revocations;
    },
    cleanup: made.cleanup,
  };
});

idempotencyContract('embedded engine, answering later', async () => {
  const made = opened('idempotency');
  return { store: asyncEngine(made.engines[0] as Engine).idempotency, cleanup: made.cleanup };
});
