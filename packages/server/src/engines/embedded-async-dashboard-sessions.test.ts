/** The dashboard session contract on the embedded engine with every call answering on a later turn (asyncEngine). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from './async-engine.js';
import { dashboardSessionsContract } from './contract/dashboard-sessions.contract.js';
import { openEmbeddedEngine } from './embedded.js';
import type { Engine } from './types.js';

const log = pino({ level: 'silent' });

dashboardSessionsContract('embedded engine, answering later', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-async-dashboard-sessions-'));
  let engine: Engine = openEmbeddedEngine({ dataDir: dir, log });
  const opened: Engine[] = [engine];
  return {
    store: asyncEngine(engine).dashboardSessions,
    reopen: async () => {
      await engine.close();
      engine = openEmbeddedEngine({ dataDir: dir, log });
      opened.push(engine);
      return asyncEngine(engine).dashboardSessions;
    },
    cleanup: async () => {
      for (const one of opened) await one.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
