/**
 * The history, app and webhook contracts once more on the embedded engine's stores with every call
 * answering on a later turn (asyncEngine), as the broker and presence runners do: the suites hold
 * for a store that answers later, before Redis is in the picture.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { asyncEngine } from './async-engine.js';
import { appStoreContract } from './contract/apps.contract.js';
import { historyContract } from './contract/history.contract.js';
import { webhookContract } from './contract/webhooks.contract.js';
import { openEmbeddedEngine } from './embedded.js';
import type { Engine } from './types.js';

const log = pino({ level: 'silent' });

/** An embedded engine in a fresh folder, reopened or wiped on demand, seen through asyncEngine. */
function engineIn(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let engine: Engine = openEmbeddedEngine({ dataDir: dir, log });
  const opened: Engine[] = [engine];
  const open = (): Engine => {
    engine = openEmbeddedEngine({ dataDir: dir, log });
    opened.push(engine);
    return asyncEngine(engine);
  };
  return {
    first: asyncEngine(engine),
    /** Another engine on the same file, as another process would open it. */
    another: open,
    reopen: async (): Promise<Engine> => {
      await engine.close();
      return open();
    },
    wipe: async (): Promise<Engine> => {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
      return open();
    },
    cleanup: async () => {
      for (const one of opened) await one.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

historyContract('embedded engine, answering later', async () => {
  const files = engineIn('realtime-async-history-');
  return {
    store: files.first.history,
    reopen: async () => (await files.reopen()).history,
    wipe: async () => (await files.wipe()).history,
    cleanup: files.cleanup,
  };
});

appStoreContract('embedded engine, answering later', async () => {
  const files = engineIn('realtime-async-apps-');
  return {
    store: files.first.apps,
    other: async () => files.another().apps,
    cleanup: files.cleanup,
  };
});

webhookContract('embedded engine, answering later', async () => {
  const files = engineIn('realtime-async-webhooks-');
  return {
    store: files.first.webhooks,
    peer: files.another().webhooks,
    reopen: async () => (await files.reopen()).webhooks,
    cleanup: files.cleanup,
  };
});
