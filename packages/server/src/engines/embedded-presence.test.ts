import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { asyncEngine } from './async-engine.js';
import { presenceContract } from './contract/presence.contract.js';
import { openEmbeddedEngine } from './embedded.js';

const log = pino({ level: 'silent' });

function openEngine(offlineDelayMs: number) {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-presence-'));
  const engine = openEmbeddedEngine({ dataDir: dir, log, offlineDelayMs });
  const cleanup = async () => {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { engine, cleanup };
}

presenceContract('embedded engine', async ({ offlineDelayMs }) => {
  const { engine, cleanup } = openEngine(offlineDelayMs);
  return { store: engine.presence, cleanup };
});

// Every call answering on a later turn, as over a network. Two wrappers of one engine are two
// connections to the same backend: the peer counts pages beside the store.
presenceContract('embedded engine, answering asynchronously', async ({ offlineDelayMs }) => {
  const { engine, cleanup } = openEngine(offlineDelayMs);
  return { store: asyncEngine(engine).presence, peer: asyncEngine(engine).presence, cleanup };
});

describe('embedded engine presence across a graceful restart', () => {
  it('keeps the offline reports still to come: those users stay online until then, reported once', async () => {
    const T0 = 1_700_000_000_000;
    const delay = 10_000;
    const dir = mkdtempSync(join(tmpdir(), 'realtime-presence-'));
    try {
      const first = openEmbeddedEngine({ dataDir: dir, log, offlineDelayMs: delay });
      expect(await first.presence.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
      await first.presence.pageClosed('app1', 'ann', 'p1', T0 + 100);
      await first.close();

      const second = openEmbeddedEngine({ dataDir: dir, log, offlineDelayMs: delay });
      expect(await second.presence.online('app1', ['ann'], T0 + 200)).toEqual([true]);
      expect(await second.presence.takeOffline(T0 + 99 + delay, 10)).toEqual([]);
      expect(await second.presence.takeOffline(T0 + 100 + delay, 10)).toEqual([{ app: 'app1', user: 'ann' }]);
      expect(await second.presence.online('app1', ['ann'], T0 + 100 + delay)).toEqual([false]);
      await second.close();

      // Taken back once: a third start has nothing left to report.
      const third = openEmbeddedEngine({ dataDir: dir, log, offlineDelayMs: delay });
      expect(await third.presence.takeOffline(T0 + 100 * delay, 10)).toEqual([]);
      expect(await third.presence.online('app1', ['ann'], T0 + 200)).toEqual([false]);
      await third.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has a user who comes back before the restarted report is due neither offline nor online again', async () => {
    const T0 = 1_700_000_000_000;
    const delay = 10_000;
    const dir = mkdtempSync(join(tmpdir(), 'realtime-presence-'));
    try {
      const first = openEmbeddedEngine({ dataDir: dir, log, offlineDelayMs: delay });
      await first.presence.pageOpened('app1', 'ann', 'p1', T0);
      await first.presence.pageClosed('app1', 'ann', 'p1', T0);
      await first.close();
      const second = openEmbeddedEngine({ dataDir: dir, log, offlineDelayMs: delay });
      expect(await second.presence.pageOpened('app1', 'ann', 'p2', T0 + 1000)).toBe(false);
      expect(await second.presence.takeOffline(T0 + 10 * delay, 10)).toEqual([]);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
