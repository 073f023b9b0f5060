import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { historyContract } from '../contract/history.contract.js';
import { compareEventIds, parseEventId } from '../event-id.js';
import { StoreError } from '../store-error.js';
import { type Db, openDb } from './db.js';
import { GroupCommit } from './group-commit.js';
import { SqliteHistoryStore } from './history.js';
import { CommittedHistory } from './history-commit.js';

const committed = (db: Db) => {
  const commits = new GroupCommit(db);
  // Trimming left to the group, as the server runs it.
  return new CommittedHistory(commits, new SqliteHistoryStore(db, { group: commits }));
};

historyContract('CommittedHistory (group commit over SqliteHistoryStore)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-history-commit-'));
  let db = openDb(dir);
  return {
    store: committed(db),
    reopen: async () => {
      db.close();
      db = openDb(dir);
      return committed(db);
    },
    // Lost data: the file deleted, a new one made in its place.
    wipe: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
      db = openDb(dir);
      return committed(db);
    },
    cleanup: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

const T0 = 1_700_000_000_000;
const RULE: [number, number] = [1000, 1];

function rising(ids: readonly string[]): boolean {
  return ids.every((id, i) => {
    const before = ids[i - 1];
    if (before === undefined) return true;
    const [a, b] = [parseEventId(before), parseEventId(id)];
    return a !== undefined && b !== undefined && compareEventIds(a, b) < 0;
  });
}

describe('GroupCommit: one transaction per turn', () => {
  let dir: string;
  let db: Db;
  let commits: GroupCommit;
  let store: SqliteHistoryStore;
  let history: CommittedHistory;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'realtime-group-'));
    db = openDb(dir);
    commits = new GroupCommit(db, { maxUnits: 64 });
    store = new SqliteHistoryStore(db, { group: commits });
    history = new CommittedHistory(commits, store);
    // A row that breaks a deferred foreign key fails the COMMIT itself, not the statement.
    db.exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY);
      CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);`);
    db.pragma('foreign_keys = ON');
  });

  afterEach(async () => {
    await commits.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const breakCommit = () => db.prepare('INSERT INTO child (p) VALUES (42)').run();
  const data = (read: { events: { data: string }[] }) => read.events.map((e) => e.data);

  it('answers the appends of one turn after one commit, ids rising per room in call order', async () => {
    const calls = Array.from({ length: 300 }, (_, i) =>
      history.append('a', i % 2 ? 'odd' : 'even', { event: 'e', data: String(i) }, RULE, T0),
    );
    // Nothing is answered before the commit.
    expect(calls.every((call) => call instanceof Promise)).toBe(true);
    const ids = await Promise.all(calls);
    const even = ids.filter((_, i) => i % 2 === 0);
    const odd = ids.filter((_, i) => i % 2 === 1);
    expect(rising(even) && rising(odd)).toBe(true);
    expect(data(await history.last('a', 'even', 1000, T0))).toEqual(
      Array.from({ length: 150 }, (_, i) => String(2 * i)),
    );
    // A later turn goes on above them.
    const next = await history.append('a', 'even', { event: 'e', data: 'later' }, RULE, T0);
    expect(rising([...even, next])).toBe(true);
  });

  it('trims once per room at the commit to what trimming after each append would keep', async () => {
    for (const i of [1, 2, 3, 4]) await history.append('a', 't', { event: 'e', data: `"old${i}"` }, [10, 1], T0);
    // One turn, limits 5, 2, 5: after each, trimming would leave 5, then 2, then 3 newest.
    const group = [
      history.append('a', 't', { event: 'e', data: '"a"' }, [5, 1], T0),
      history.append('a', 't', { event: 'e', data: '"b"' }, [2, 1], T0),
      history.append('a', 't', { event: 'e', data: '"c"' }, [5, 1], T0),
    ];
    const [first] = await Promise.all(group);
    expect(data(await history.last('a', 't', 100, T0))).toEqual(['"a"', '"b"', '"c"']);
    // The events dropped in the group are reported to a page resuming from before them.
    const resumed = await history.since('a', 't', first as string, T0);
    expect(resumed.events.map((e) => e.data)).toEqual(['"b"', '"c"']);
    // Many appends of one turn to a room at its limit keep exactly the limit.
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => history.append('a', 'u', { event: 'e', data: String(i) }, [7, 1], T0)),
    );
    expect(data(await history.last('a', 'u', 100, T0))).toEqual(Array.from({ length: 7 }, (_, i) => String(43 + i)));
  });

  it('a trim never outlives what it trimmed for: a failed unit or a failed group trims nothing', async () => {
    for (const i of [1, 2, 3, 4, 5]) await history.append('a', 'v', { event: 'e', data: `"${i}"` }, [10, 1], T0);
    const unit = commits.run(
      () => {
        store.append('a', 'v', { event: 'e', data: '"undone"' }, [1, 1], T0);
        throw new Error('the rest of the unit failed');
      },
      () => 'delivered',
    );
    await expect(unit).rejects.toThrow('the rest of the unit failed');
    expect(data(await history.last('a', 'v', 100, T0))).toEqual(['"1"', '"2"', '"3"', '"4"', '"5"']);
    const failedGroup = [
      history.append('a', 'v', { event: 'e', data: '"lost"' }, [1, 1], T0),
      commits.run(breakCommit, () => 'delivered'),
    ];
    await Promise.allSettled(failedGroup);
    await history.append('a', 'v', { event: 'e', data: '"6"' }, [100, 1], T0);
    expect(data(await history.last('a', 'v', 100, T0))).toEqual(['"1"', '"2"', '"3"', '"4"', '"5"', '"6"']);
  });

  it('a failed commit fails every append of it, keeps none, and ids still rise after it', async () => {
    const before = await history.append('a', 'r', { event: 'e', data: '"before"' }, RULE, T0);
    const appends = [1, 2, 3].map((i) => history.append('a', 'r', { event: 'e', data: String(i) }, RULE, T0));
    const delivered: string[] = [];
    const breaking = commits.run(breakCommit, () => delivered.push('broken'));
    const results = await Promise.allSettled([...appends, breaking]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      const reason = (result as PromiseRejectedResult).reason;
      expect(reason).toBeInstanceOf(StoreError);
      expect((reason as StoreError).kind).toBe('unavailable');
    }
    expect(delivered).toEqual([]);
    expect(data(await history.last('a', 'r', 100, T0))).toEqual(['"before"']);
    const after = await history.append('a', 'r', { event: 'e', data: '"after"' }, RULE, T0);
    expect(rising([before, after])).toBe(true);
    expect(data(await history.last('a', 'r', 100, T0))).toEqual(['"before"', '"after"']);
  });

  it('a unit whose write fails is undone alone; the others of the turn are kept', async () => {
    const first = history.append('a', 'r', { event: 'e', data: '1' }, RULE, T0);
    const failing = commits.run(
      () => {
        store.append('a', 'r', { event: 'e', data: '"undone"' }, RULE, T0);
        throw new StoreError('full');
      },
      () => 'delivered',
    );
    const last = history.append('a', 'r', { event: 'e', data: '3' }, RULE, T0);
    await expect(failing).rejects.toMatchObject({ kind: 'full', code: 'storage_full' });
    expect(rising([await first, await last])).toBe(true);
    expect(data(await history.last('a', 'r', 100, T0))).toEqual(['1', '3']);
  });

  it('delivers units in the order given, each after the one before, even when one waits', async () => {
    const order: string[] = [];
    const slow = commits.run(
      () => 'slow',
      async (stored) => {
        // Its delivery goes on in a later turn of the event loop: the next unit must wait for it.
        await new Promise((resolve) => setImmediate(resolve));
        order.push(stored);
        return stored;
      },
    );
    const quick = commits.run(
      () => 'quick',
      (stored) => {
        order.push(stored);
        return stored;
      },
    );
    // More than one transaction's worth (maxUnits 64): still in order.
    const many = Array.from({ length: 100 }, (_, i) =>
      commits.run(
        () => i,
        (n) => order.push(`n${n}`),
      ),
    );
    expect(await Promise.all([slow, quick])).toEqual(['slow', 'quick']);
    await Promise.all(many);
    expect(order).toEqual(['slow', 'quick', ...Array.from({ length: 100 }, (_, i) => `n${i}`)]);
  });

  it('refuses units once closed, after committing those waiting', async () => {
    const waiting = history.append('a', 'r', { event: 'e', data: '1' }, RULE, T0);
    await commits.close();
    expect(typeof (await waiting)).toBe('string');
    await expect(history.append('a', 'r', { event: 'e', data: '2' }, RULE, T0)).rejects.toBeInstanceOf(StoreError);
  });
});
