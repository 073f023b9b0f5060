import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { historyContract } from '../contract/history.contract.js';
import { openDb } from './db.js';
import { SqliteHistoryStore } from './history.js';

historyContract('SqliteHistoryStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-history-'));
  let db = openDb(dir);
  return {
    store: new SqliteHistoryStore(db),
    // A restart: close the file and open it again.
    reopen: async () => {
      db.close();
      db = openDb(dir);
      return new SqliteHistoryStore(db);
    },
    // Lost data: the file deleted, a new one made in its place.
    wipe: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
      db = openDb(dir);
      return new SqliteHistoryStore(db);
    },
    cleanup: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteHistoryStore: ids after rooms are forgotten from memory', () => {
  it('keeps rising when the clock stepped back and 100,000 other rooms pushed the room out', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openDb } = await import('./db.js');
    const { SqliteHistoryStore } = await import('./history.js');
    const dir = mkdtempSync(join(tmpdir(), 'realtime-ids-'));
    const db = openDb(dir);
    const store = new SqliteHistoryStore(db);
    const t = 1_700_000_000_000;
    const first = store.nextId('app', 'a', t);
    const second = store.nextId('app', 'a', t);
    for (let i = 0; i < 100_001; i++) store.nextId('app', `r${i}`, t - 5000);
    const third = store.nextId('app', 'a', t - 5000);
    const parse = (id: string) => id.split('-').map(Number) as [number, number];
    const after = (x: string, y: string) => {
      const [xm, xs] = parse(x);
      const [ym, ys] = parse(y);
      return xm > ym || (xm === ym && xs > ys);
    };
    expect(after(second, first)).toBe(true);
    expect(after(third, second)).toBe(true);
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
