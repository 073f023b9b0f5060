/**
 * The HistoryStore contract as one test suite. Every implementation (SQLite now, Redis later) runs
 * it through a runner file next to the implementation:
 *
 * @example
 * ```ts
 * historyContract('SqliteHistoryStore', async () => {
 *   const dir = mkdtempSync(join(tmpdir(), 'history-'));
 *   let db = openDb(dir);
 *   return {
 *     store: new SqliteHistoryStore(db),
 *     reopen: async () => { db.close(); db = openDb(dir); return new SqliteHistoryStore(db); },
 *     wipe: async () => { db.close(); rmSync(dir, { recursive: true }); db = openDb(dir); return new SqliteHistoryStore(db); },
 *     cleanup: async () => { db.close(); rmSync(dir, { recursive: true, force: true }); },
 *   };
 * });
 * ```
 *
 * Time is never read from the clock: every call gets `nowMs`, so the suite moves time by hand.
 */
import type { HistoryRule } from '@realtime/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compareEventIds, type EventId, formatEventId, parseEventId } from '../event-id.js';
import type { HistoryStore, KeptEvent, PageBound } from '../types.js';

export interface HistoryHarness {
  /** A store with no events in it. */
  store: HistoryStore;
  /**
   * Closes the store and opens a new one on the same data, as a restart would (SQLite: close the
   * file and open it again). Stores that keep nothing across a restart leave it out; the restart
   * tests then run against the same store, so they still check what they can.
   */
  reopen?: () => Promise<HistoryStore>;
  /**
   * Loses every room's data as a Redis restart without persistence would (SQLite: delete the file
   * and open a new one). Answers the store to use from then on when it had to make a new one, nothing
   * when the same store carries on. Stores that cannot lose their data that way leave it out.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a plain `async () => { ... }` hook is welcome.
  wipe?: () => Promise<HistoryStore | void>;
  /** Closes whatever is open (including a reopened store) and removes the data. */
  cleanup(): Promise<void>;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;
/** An arbitrary fixed "now"; far from 0 so a clock that steps back stays positive. */
const T0 = 1_700_000_000_000;
/** A rule that keeps everything the tests write. */
const KEEP_ALL: HistoryRule = [1000, 168];

function parsed(id: string): EventId {
  const value = parseEventId(id);
  if (!value) throw new Error(`not an event id: ${JSON.stringify(id)}`);
  return value;
}

/** Fails unless each id is strictly greater than the one before it. */
function expectRising(ids: readonly string[]): void {
  for (let i = 1; i < ids.length; i++) {
    const before = ids[i - 1] ?? '';
    const after = ids[i] ?? '';
    if (compareEventIds(parsed(before), parsed(after)) >= 0) {
      throw new Error(`ids do not rise at ${i}: ${before} then ${after}`);
    }
  }
}

const ids = (events: readonly KeptEvent[]): string[] => events.map((e) => e.id);

/** The events of a `last` read without a bound: one page holds them all. */
async function allLast(
  store: HistoryStore,
  app: string,
  room: string,
  count: number,
  nowMs: number,
): Promise<KeptEvent[]> {
  const page = await store.last(app, room, count, nowMs);
  expect(page.remaining).toBe(0);
  return page.events;
}
const datas = (events: readonly KeptEvent[]): string[] => events.map((e) => e.data);
/** Any epoch, in answers whose exact shape a test checks (the epoch tests check its value). */
const anEpoch: unknown = expect.any(String);

export function historyContract(name: string, makeStore: () => Promise<HistoryHarness>): void {
  describe(`HistoryStore contract: ${name}`, () => {
    let harness: HistoryHarness;
    let store: HistoryStore;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    /** Appends `count` events named `e` with data `"<prefix><i>"`; returns their ids. */
    async function fill(
      app: string,
      room: string,
      count: number,
      rule: HistoryRule,
      nowMs: number,
      prefix = 'n',
    ): Promise<string[]> {
      const out: string[] = [];
      for (let i = 0; i < count; i++) {
        out.push(await store.append(app, room, { event: 'e', data: JSON.stringify(`${prefix}${i}`) }, rule, nowMs));
      }
      return out;
    }

    describe('event ids', () => {
      it('gives ids of the form <ms>-<seq>, with the append time as <ms>', async () => {
        const first = await store.append('a', 'lobby', { event: 'e', data: '1' }, KEEP_ALL, T0);
        const second = await store.append('a', 'lobby', { event: 'e', data: '2' }, KEEP_ALL, T0 + 7);
        for (const id of [first, second]) {
          expect(id).toMatch(/^\d+-\d+$/);
          // Written the one way formatEventId writes it (no leading zeros), so ids compare as text too.
          expect(formatEventId(parsed(id))).toBe(id);
        }
        expect(parsed(first).ms).toBe(T0);
        expect(parsed(second).ms).toBe(T0 + 7);
        expectRising([first, second]);
      });

      it('rises strictly for many appends in the same millisecond', async () => {
        const given = await fill('a', 'lobby', 500, KEEP_ALL, T0);
        expect(new Set(given).size).toBe(500);
        expectRising(given);
        for (const id of given) expect(parsed(id).ms).toBe(T0);
        // Numeric order, not text order: 10 comes after 9 within one millisecond.
        expect(ids(await allLast(store, 'a', 'lobby', 1000, T0))).toEqual(given);
      });

      it('rises strictly when the clock steps backwards, and follows the clock again once it passes', async () => {
        const times = [T0 + 1000, T0 + 1000, T0, T0 - 5000, T0 + 999, T0 + 1000, T0 + 2000, T0 + 1500, T0 + 2001];
        const given: string[] = [];
        for (const [i, now] of times.entries()) {
          given.push(await store.append('a', 'lobby', { event: 'e', data: String(i) }, KEEP_ALL, now));
        }
        expectRising(given);
        // Once the clock is past the newest id again, the id carries the clock's time.
        expect(parsed(given[6] ?? '').ms).toBe(T0 + 2000);
        expect(parsed(given[8] ?? '').ms).toBe(T0 + 2001);
        const kept = await store.since('a', 'lobby', '0-0', T0 + 2001);
        expect(ids(kept.events)).toEqual(given);
        expect(datas(kept.events)).toEqual(times.map((_, i) => String(i)));
      });
    });

    describe('rooms and apps', () => {
      it('keeps the events of each room of each app apart', async () => {
        const targets: Array<[string, string]> = [
          ['a', 'lobby'],
          ['a', 'Lobby'],
          ['a', 'lobby '],
          ['a', 'x:y'],
          ['a', 'ünïcødé 🚀'],
          ['b', 'lobby'],
          ['b', 'x:y'],
        ];
        const given = new Map<string, string[]>();
        // Interleaved: one event per target per round.
        for (let round = 0; round < 4; round++) {
          for (const [app, room] of targets) {
            const key = `${app}/${room}`;
            const data = JSON.stringify(`${key}#${round}`);
            const id = await store.append(app, room, { event: 'e', data }, KEEP_ALL, T0 + round);
            given.set(key, [...(given.get(key) ?? []), id]);
          }
        }
        for (const [app, room] of targets) {
          const key = `${app}/${room}`;
          const expected = [0, 1, 2, 3].map((round) => JSON.stringify(`${key}#${round}`));
          const last = await allLast(store, app, room, 100, T0 + 10);
          expect(datas(last)).toEqual(expected);
          expect(ids(last)).toEqual(given.get(key));
          const since = await store.since(app, room, '0-0', T0 + 10);
          expect(datas(since.events)).toEqual(expected);
          expect(since.truncated).toBe(false);
        }
      });

      it('trims and ages only the room the rule was given for', async () => {
        await fill('a', 'one', 5, KEEP_ALL, T0, 'one');
        await fill('a', 'two', 5, KEEP_ALL, T0, 'two');
        await fill('b', 'one', 5, KEEP_ALL, T0, 'b-one');
        // A tight limit and a short life in a/one only.
        await store.append('a', 'one', { event: 'e', data: '"last"' }, [1, 0.5], T0 + 1);
        expect(datas(await allLast(store, 'a', 'one', 100, T0 + 1))).toEqual(['"last"']);
        expect(await allLast(store, 'a', 'one', 100, T0 + HOUR)).toEqual([]);
        expect(await allLast(store, 'a', 'two', 100, T0 + HOUR)).toHaveLength(5);
        expect(await allLast(store, 'b', 'one', 100, T0 + HOUR)).toHaveLength(5);
        expect((await store.since('a', 'two', '0-0', T0 + HOUR)).truncated).toBe(false);
        expect((await store.since('b', 'one', '0-0', T0 + HOUR)).truncated).toBe(false);
        expect((await store.since('a', 'one', '0-0', T0 + HOUR)).truncated).toBe(true);
      });

      it('counts ids per room: a clock step seen in one room does not move another', async () => {
        const ahead = await store.append('a', 'one', { event: 'e', data: '1' }, KEEP_ALL, T0 + 60_000);
        const sameApp = await store.append('a', 'two', { event: 'e', data: '2' }, KEEP_ALL, T0);
        const otherApp = await store.append('b', 'one', { event: 'e', data: '3' }, KEEP_ALL, T0);
        expect(parsed(ahead).ms).toBe(T0 + 60_000);
        expect(parsed(sameApp).ms).toBe(T0);
        expect(parsed(otherApp).ms).toBe(T0);
      });
    });

    describe('limit', () => {
      it('keeps the newest `limit` events', async () => {
        const given = await fill('a', 'lobby', 10, [3, 1], T0);
        const kept = await allLast(store, 'a', 'lobby', 100, T0);
        expect(datas(kept)).toEqual(['"n7"', '"n8"', '"n9"']);
        expect(ids(kept)).toEqual(given.slice(7));
      });

      it('keeps only the newest with a limit of 1', async () => {
        const given = await fill('a', 'lobby', 4, [1, 1], T0);
        expect(ids(await allLast(store, 'a', 'lobby', 100, T0))).toEqual(given.slice(3));
      });

      it('keeps up to 1,000 events', async () => {
        const given = await fill('a', 'lobby', 1001, [1000, 168], T0);
        const kept = await allLast(store, 'a', 'lobby', 1000, T0);
        expect(kept).toHaveLength(1000);
        expect(ids(kept)).toEqual(given.slice(1));
      });

      it("applies each append's limit: a smaller one trims at once, a larger one lets the room grow again", async () => {
        await fill('a', 'lobby', 5, [5, 1], T0, 'first');
        await store.append('a', 'lobby', { event: 'e', data: '"small"' }, [2, 1], T0);
        expect(datas(await allLast(store, 'a', 'lobby', 100, T0))).toEqual(['"first4"', '"small"']);
        await fill('a', 'lobby', 3, [4, 1], T0, 'big');
        expect(datas(await allLast(store, 'a', 'lobby', 100, T0))).toEqual(['"small"', '"big0"', '"big1"', '"big2"']);
      });
    });

    describe('hours', () => {
      it('drops each event `hours` after it was appended', async () => {
        await store.append('a', 'lobby', { event: 'e', data: '"early"' }, [100, 1], T0);
        await store.append('a', 'lobby', { event: 'e', data: '"later"' }, [100, 1], T0 + 30 * MINUTE);
        expect(datas(await allLast(store, 'a', 'lobby', 10, T0 + HOUR - 1))).toEqual(['"early"', '"later"']);
        expect(datas(await allLast(store, 'a', 'lobby', 10, T0 + HOUR + 1))).toEqual(['"later"']);
        expect(datas(await allLast(store, 'a', 'lobby', 10, T0 + 30 * MINUTE + HOUR - 1))).toEqual(['"later"']);
        expect(await allLast(store, 'a', 'lobby', 10, T0 + 30 * MINUTE + HOUR + 1)).toEqual([]);
      });

      it('takes hours that are not whole', async () => {
        await store.append('a', 'lobby', { event: 'e', data: '"q"' }, [100, 0.25], T0);
        expect(datas(await allLast(store, 'a', 'lobby', 10, T0 + 15 * MINUTE - 1))).toEqual(['"q"']);
        expect(await allLast(store, 'a', 'lobby', 10, T0 + 15 * MINUTE + 1)).toEqual([]);
      });

      it('keeps events for up to 168 hours', async () => {
        await store.append('a', 'lobby', { event: 'e', data: '"week"' }, [100, 168], T0);
        expect(datas(await allLast(store, 'a', 'lobby', 10, T0 + 168 * HOUR - 1))).toEqual(['"week"']);
        expect(await allLast(store, 'a', 'lobby', 10, T0 + 168 * HOUR + 1)).toEqual([]);
      });

      it('keeps only the young events once new ones come in after old ones aged out', async () => {
        const old = await fill('a', 'lobby', 3, [100, 1], T0, 'old');
        const young = await store.append('a', 'lobby', { event: 'e', data: '"new"' }, [100, 1], T0 + 2 * HOUR);
        expect(datas(await allLast(store, 'a', 'lobby', 10, T0 + 2 * HOUR))).toEqual(['"new"']);
        expect(await store.since('a', 'lobby', old[0] ?? '', T0 + 2 * HOUR)).toMatchObject({ truncated: true });
        expect(ids((await store.since('a', 'lobby', old[2] ?? '', T0 + 2 * HOUR)).events)).toEqual([young]);
      });
    });

    describe('since', () => {
      it('returns exactly the events after the id, oldest first, each as appended', async () => {
        const entries = [
          { event: 'chat', data: '{"text":"hi"}', from: 'ann' },
          { event: 'chat', data: '{"text":"hello"}', from: 'bob' },
          { event: 'move', data: '[1,2]' },
          { event: 'chat', data: '"x"', from: 'ann' },
          { event: 'end', data: 'null' },
        ];
        const given: string[] = [];
        for (const [i, entry] of entries.entries()) {
          given.push(await store.append('a', 'lobby', entry, KEEP_ALL, T0 + i));
        }
        const expected = entries.map((entry, i) => ({ id: given[i], ...entry }));
        for (let i = 0; i < given.length; i++) {
          const result = await store.since('a', 'lobby', given[i] ?? '', T0 + 10);
          expect(result.events).toEqual(expected.slice(i + 1));
          expect(result.truncated).toBe(false);
        }
      });

      it('orders ids by number, not by text', async () => {
        const given = await fill('a', 'lobby', 12, KEEP_ALL, T0);
        const result = await store.since('a', 'lobby', given[1] ?? '', T0);
        expect(ids(result.events)).toEqual(given.slice(2));
        expect(datas(result.events)).toEqual(Array.from({ length: 10 }, (_, i) => `"n${i + 2}"`));
      });

      it('takes an id the room never gave: the events after it in order', async () => {
        const early = await fill('a', 'lobby', 2, KEEP_ALL, T0, 'early');
        const late = await fill('a', 'lobby', 2, KEEP_ALL, T0 + 10, 'late');
        const between = formatEventId({ ms: parsed(early[1] ?? '').ms + 5, seq: 0 });
        const result = await store.since('a', 'lobby', between, T0 + 10);
        expect(ids(result.events)).toEqual(late);
        expect(result.truncated).toBe(false);
        const beforeAll = await store.since('a', 'lobby', '0-0', T0 + 10);
        expect(ids(beforeAll.events)).toEqual([...early, ...late]);
        expect(beforeAll.truncated).toBe(false);
      });

      it('returns nothing, not truncated, after the newest id or an id from the future', async () => {
        const given = await fill('a', 'lobby', 3, KEEP_ALL, T0);
        expect(await store.since('a', 'lobby', given[2] ?? '', T0)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
        const future = formatEventId({ ms: T0 + HOUR, seq: 0 });
        expect(await store.since('a', 'lobby', future, T0)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
      });

      it('returns nothing, not truncated, for a room that has no history', async () => {
        await fill('a', 'lobby', 2, [1, 1], T0);
        expect(await store.since('a', 'nowhere', '0-0', T0)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
        expect(await store.since('b', 'lobby', '0-0', T0)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
        expect(await store.since('b', 'lobby', `${T0}-0`, T0)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
      });

      it('is truncated when the limit dropped events after the id, and only then', async () => {
        const given = await fill('a', 'lobby', 5, [3, 1], T0);
        // Kept: 2, 3, 4. Dropped: 0, 1.
        const after0 = await store.since('a', 'lobby', given[0] ?? '', T0);
        expect(ids(after0.events)).toEqual(given.slice(2));
        expect(after0.truncated).toBe(true);
        const after1 = await store.since('a', 'lobby', given[1] ?? '', T0);
        expect(ids(after1.events)).toEqual(given.slice(2));
        expect(after1.truncated).toBe(false);
        const after2 = await store.since('a', 'lobby', given[2] ?? '', T0);
        expect(ids(after2.events)).toEqual(given.slice(3));
        expect(after2.truncated).toBe(false);
        const fromStart = await store.since('a', 'lobby', '0-0', T0);
        expect(ids(fromStart.events)).toEqual(given.slice(2));
        expect(fromStart.truncated).toBe(true);
      });

      it('is truncated when age dropped events after the id, and only then', async () => {
        const given: string[] = [];
        for (let i = 0; i < 3; i++) {
          given.push(await store.append('a', 'lobby', { event: 'e', data: String(i) }, [100, 1], T0 + i * MINUTE));
        }
        // At this time 0 and 1 have aged out, 2 is kept.
        const now = T0 + HOUR + MINUTE + 1;
        const after0 = await store.since('a', 'lobby', given[0] ?? '', now);
        expect(ids(after0.events)).toEqual(given.slice(2));
        expect(after0.truncated).toBe(true);
        const after1 = await store.since('a', 'lobby', given[1] ?? '', now);
        expect(ids(after1.events)).toEqual(given.slice(2));
        expect(after1.truncated).toBe(false);
        expect(await store.since('a', 'lobby', given[2] ?? '', now)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
      });

      it('still reports the gap when every event of the room aged out', async () => {
        const given = await fill('a', 'lobby', 3, [100, 1], T0);
        const now = T0 + 2 * HOUR;
        expect(await store.since('a', 'lobby', given[0] ?? '', now)).toEqual({
          events: [],
          remaining: 0,
          truncated: true,
          dropped: true,
          epoch: anEpoch,
        });
        expect(await store.since('a', 'lobby', given[2] ?? '', now)).toEqual({
          events: [],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
        // New events after the gap come with it.
        const next = await store.append('a', 'lobby', { event: 'e', data: '"next"' }, [100, 1], now);
        const result = await store.since('a', 'lobby', given[1] ?? '', now);
        expect(ids(result.events)).toEqual([next]);
        expect(result.truncated).toBe(true);
        expect(await store.since('a', 'lobby', given[2] ?? '', now)).toEqual({
          events: [{ id: next, event: 'e', data: '"next"' }],
          remaining: 0,
          truncated: false,
          dropped: false,
          epoch: anEpoch,
        });
      });
    });

    describe('last', () => {
      it('returns the newest n events, oldest first', async () => {
        const given = await fill('a', 'lobby', 7, KEEP_ALL, T0);
        expect(ids(await allLast(store, 'a', 'lobby', 3, T0))).toEqual(given.slice(4));
        expect(ids(await allLast(store, 'a', 'lobby', 1, T0))).toEqual(given.slice(6));
        expect(ids(await allLast(store, 'a', 'lobby', 7, T0))).toEqual(given);
        expect(ids(await allLast(store, 'a', 'lobby', 100, T0))).toEqual(given);
        expect(await allLast(store, 'a', 'lobby', 0, T0)).toEqual([]);
      });

      it('returns whole events: id, event, data and from', async () => {
        const id = await store.append('a', 'lobby', { event: 'chat', data: '{"t":1}', from: 'ann' }, KEEP_ALL, T0);
        expect(await allLast(store, 'a', 'lobby', 1, T0)).toEqual([
          { id, event: 'chat', data: '{"t":1}', from: 'ann' },
        ]);
      });

      it('returns nothing for a room that has no history', async () => {
        await fill('a', 'lobby', 2, KEEP_ALL, T0);
        expect(await allLast(store, 'a', 'elsewhere', 10, T0)).toEqual([]);
        expect(await allLast(store, 'b', 'lobby', 10, T0)).toEqual([]);
      });
    });

    describe('count', () => {
      it('counts the kept events of a room, as limit and age leave them, with the epoch reads name', async () => {
        const empty = await store.count('a', 'lobby', T0);
        expect(empty.count).toBe(0);
        expect(empty.epoch).toBe((await store.last('a', 'lobby', 1, T0)).epoch);
        await fill('a', 'lobby', 7, [5, 1], T0);
        await store.append('a', 'lobby', { event: 'e', data: '1' }, [10, 2], T0 + 30 * MINUTE);
        await store.nextId('a', 'lobby', T0 + 30 * MINUTE);
        await fill('b', 'lobby', 2, KEEP_ALL, T0);
        expect(await store.count('a', 'lobby', T0 + 30 * MINUTE)).toEqual({ count: 6, epoch: empty.epoch });
        expect((await store.count('b', 'lobby', T0)).count).toBe(2);
        expect((await store.count('a', 'elsewhere', T0)).count).toBe(0);
        // An hour on, the first five aged out; the count drops them as a read would.
        expect(await store.count('a', 'lobby', T0 + HOUR)).toEqual({ count: 1, epoch: empty.epoch });
        expect(ids(await allLast(store, 'a', 'lobby', 100, T0 + HOUR))).toHaveLength(1);
        expect((await store.count('a', 'lobby', T0 + 3 * HOUR)).count).toBe(0);
      });

      it('names the epoch a later read names, and a new one once the data was lost', async () => {
        const first = await store.count('a', 'fresh', T0);
        await fill('a', 'fresh', 1, KEEP_ALL, T0);
        expect((await store.since('a', 'fresh', '0-0', T0)).epoch).toBe(first.epoch);
        if (!harness.wipe) return;
        store = (await harness.wipe()) ?? store;
        const after = await store.count('a', 'fresh', T0 + MINUTE);
        expect(after.count).toBe(0);
        expect(after.epoch).not.toBe(first.epoch);
        expect((await store.last('a', 'fresh', 1, T0 + MINUTE)).epoch).toBe(after.epoch);
      });
    });

    describe('pages', () => {
      /** Reads a whole `last` read page by page as a replay does: `since` the last id, for what remains. */
      async function pagedLast(room: string, count: number, bound: PageBound, now = T0): Promise<KeptEvent[][]> {
        const first = await store.last('a', room, count, now, bound);
        const pages = [first.events];
        let remaining = first.remaining;
        while (remaining > 0) {
          const after = pages.at(-1)?.at(-1)?.id ?? '0-0';
          const next = await store.since('a', room, after, now, {
            ...bound,
            events: Math.min(bound.events, remaining),
          });
          expect(next.dropped).toBe(false);
          expect(next.events.length).toBeGreaterThan(0);
          pages.push(next.events);
          remaining -= next.events.length;
        }
        return pages;
      }

      it('reads `last` in pages of at most the bound, oldest first, counting what follows', async () => {
        const given = await fill('a', 'lobby', 10, KEEP_ALL, T0);
        const first = await store.last('a', 'lobby', 7, T0, { events: 3, bytes: 1_000_000 });
        expect(ids(first.events)).toEqual(given.slice(3, 6));
        expect(first.remaining).toBe(4);
        const pages = await pagedLast('lobby', 7, { events: 3, bytes: 1_000_000 });
        expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
        expect(ids(pages.flat())).toEqual(given.slice(3));
        // A bound larger than the read: one page, nothing follows.
        expect(await store.last('a', 'lobby', 4, T0, { events: 100, bytes: 1_000_000 })).toEqual({
          events: (await allLast(store, 'a', 'lobby', 4, T0)).map((e) => expect.objectContaining({ id: e.id })),
          remaining: 0,
          epoch: anEpoch,
        });
        expect(await store.last('a', 'elsewhere', 4, T0, { events: 2, bytes: 1000 })).toEqual({
          events: [],
          remaining: 0,
          epoch: anEpoch,
        });
      });

      it('stops a page before the event that would pass its bytes, but always gives one event', async () => {
        const big = JSON.stringify('x'.repeat(1000));
        const given: string[] = [];
        for (let i = 0; i < 5; i++)
          given.push(await store.append('a', 'lobby', { event: 'e', data: big }, KEEP_ALL, T0));
        const pages = await pagedLast('lobby', 5, { events: 100, bytes: 2500 });
        expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
        expect(ids(pages.flat())).toEqual(given);
        // Each event alone is over the bound: one per page, none left out.
        const single = await pagedLast('lobby', 5, { events: 100, bytes: 10 });
        expect(single.map((page) => page.length)).toEqual([1, 1, 1, 1, 1]);
        const since = await store.since('a', 'lobby', '0-0', T0, { events: 100, bytes: 10 });
        expect(ids(since.events)).toEqual(given.slice(0, 1));
        expect(since.remaining).toBe(4);
      });

      it('reads `since` in pages; the first says whether there is a gap, every one what follows', async () => {
        const given = await fill('a', 'lobby', 8, [6, 1], T0);
        // Kept: 2..7; 0 and 1 were dropped.
        const first = await store.since('a', 'lobby', given[0] ?? '', T0, { events: 4, bytes: 1_000_000 });
        expect(first).toMatchObject({ remaining: 2, truncated: true, dropped: true });
        expect(ids(first.events)).toEqual(given.slice(2, 6));
        const second = await store.since('a', 'lobby', given[5] ?? '', T0, { events: 4, bytes: 1_000_000 });
        expect(second).toMatchObject({ remaining: 0, truncated: false, dropped: false });
        expect(ids(second.events)).toEqual(given.slice(6));
        // What remains is counted at each read: events appended meanwhile come in later pages.
        const more = await fill('a', 'lobby', 2, [6, 1], T0, 'more');
        const third = await store.since('a', 'lobby', given[7] ?? '', T0, { events: 1, bytes: 1_000_000 });
        expect(ids(third.events)).toEqual(more.slice(0, 1));
        expect(third.remaining).toBe(1);
      });

      it('says `dropped` when the limit passed a reader between two pages', async () => {
        const given = await fill('a', 'lobby', 5, [5, 1], T0);
        const first = await store.last('a', 'lobby', 5, T0, { events: 2, bytes: 1_000_000 });
        expect(ids(first.events)).toEqual(given.slice(0, 2));
        // Four more events push out the four oldest: the reader's next event (given[2]) is gone.
        const newer = await fill('a', 'lobby', 4, [5, 1], T0, 'newer');
        const next = await store.since('a', 'lobby', given[1] ?? '', T0, { events: 3, bytes: 1_000_000 });
        expect(next).toMatchObject({ truncated: true, dropped: true });
        expect(ids(next.events)).toEqual([given[4], newer[0], newer[1]]);
        // An event the room never kept is a gap for a resume, but nothing a reader fell behind on.
        await store.nextId('a', 'lobby', T0);
        const after = await store.since('a', 'lobby', newer[3] ?? '', T0, { events: 3, bytes: 1_000_000 });
        expect(after).toEqual({ events: [], remaining: 0, truncated: true, dropped: false, epoch: anEpoch });
      });
    });

    describe('what is kept', () => {
      it('keeps `from` when given and leaves it out when not', async () => {
        await store.append('a', 'lobby', { event: 'say', data: '1', from: 'user ü 42' }, KEEP_ALL, T0);
        await store.append('a', 'lobby', { event: 'say', data: '2' }, KEEP_ALL, T0);
        await store.append('a', 'lobby', { event: 'say', data: '3', from: '' }, KEEP_ALL, T0);
        const [withFrom, without, empty] = await allLast(store, 'a', 'lobby', 3, T0);
        expect(withFrom?.from).toBe('user ü 42');
        expect(without?.from).toBeUndefined();
        expect(without?.data).toBe('2');
        expect(empty?.from).toBe('');
        const resumed = await store.since('a', 'lobby', '0-0', T0);
        expect(resumed.events.map((e) => e.from)).toEqual(['user ü 42', undefined, '']);
      });

      it('stores the JSON text of data byte for byte', async () => {
        const texts = [
          '{ "a" : 1 ,\n\t"b" : [ ] }',
          '"\\u00e9\\ud83d\\ude00\\/\\"\\\\"',
          JSON.stringify('é ü ß 漢字 😀 \u2028\u2029 \u0000 \ud800'),
          '"e\u0301"',
          '-0.0e+10',
          '1E400',
          'null',
          'true',
          '[ "]" , "{" , "\\"" ]',
          '{"a":1,"a":2}',
          JSON.stringify('x'.repeat(200_000) + '😀'.repeat(100_000) + 'é'.repeat(100_000)),
        ];
        const given: string[] = [];
        for (const data of texts) given.push(await store.append('a', 'lobby', { event: 'é 🚀', data }, KEEP_ALL, T0));
        const kept = await allLast(store, 'a', 'lobby', texts.length, T0);
        expect(kept).toHaveLength(texts.length);
        for (const [i, event] of kept.entries()) {
          expect(event.data === texts[i]).toBe(true);
          expect(Buffer.from(event.data).equals(Buffer.from(texts[i] ?? ''))).toBe(true);
          expect(event.event).toBe('é 🚀');
          expect(event.id).toBe(given[i]);
        }
        const resumed = await store.since('a', 'lobby', '0-0', T0);
        expect(datas(resumed.events)).toEqual(texts);
      });
    });

    describe('prune', () => {
      it('removes aged events in every room of every app and says how many went', async () => {
        await fill('a', 'one', 3, [100, 1], T0);
        await fill('a', 'two', 2, [100, 2], T0);
        await fill('b', 'one', 1, [100, 1], T0);
        await store.append('b', 'one', { event: 'e', data: '"young"' }, [100, 3], T0);
        expect(await store.prune(T0)).toBe(0);
        expect(await store.prune(T0 + HOUR + 1)).toBe(4);
        expect(await store.prune(T0 + HOUR + 1)).toBe(0);
        expect(await allLast(store, 'a', 'one', 10, T0)).toEqual([]);
        expect(await allLast(store, 'a', 'two', 10, T0)).toHaveLength(2);
        expect(datas(await allLast(store, 'b', 'one', 10, T0 + 2 * HOUR))).toEqual(['"young"']);
        expect(await store.prune(T0 + 2 * HOUR + 1)).toBe(2);
        expect(await allLast(store, 'a', 'two', 10, T0 + 2 * HOUR + 1)).toEqual([]);
        expect(await store.prune(T0 + 3 * HOUR + 1)).toBe(1);
      });

      it('removes nothing from an empty store', async () => {
        expect(await store.prune(T0)).toBe(0);
      });

      it('leaves the gap it made visible to since', async () => {
        const old = await fill('a', 'lobby', 2, [100, 1], T0);
        const young = await store.append('a', 'lobby', { event: 'e', data: '"young"' }, [100, 1], T0 + 30 * MINUTE);
        expect(await store.prune(T0 + HOUR + 1)).toBe(2);
        const result = await store.since('a', 'lobby', old[0] ?? '', T0 + HOUR + 1);
        expect(ids(result.events)).toEqual([young]);
        expect(result.truncated).toBe(true);
        expect((await store.since('a', 'lobby', old[1] ?? '', T0 + HOUR + 1)).truncated).toBe(false);
      });

      it('does not give a pruned room its old ids again', async () => {
        const old = await fill('a', 'lobby', 3, [100, 1], T0 + HOUR);
        expect(await store.prune(T0 + 3 * HOUR)).toBe(3);
        // The clock is behind the pruned ids: the next id must still be after them.
        const next = await store.append('a', 'lobby', { event: 'e', data: '1' }, [100, 1], T0);
        expectRising([...old, next]);
      });
    });

    describe('removing an app', () => {
      it('drops every room of the app, kept events and ids alike, and nothing of another app', async () => {
        await fill('a', 'one', 3, KEEP_ALL, T0);
        await fill('a', 'x:y', 2, KEEP_ALL, T0);
        await store.nextId('a', 'unkept', T0);
        // Keys that start like the removed one are other apps.
        const others = [...(await fill('a0', 'one', 2, KEEP_ALL, T0)), ...(await fill('b', 'one', 1, KEEP_ALL, T0))];
        const epoch = (await store.last('b', 'one', 10, T0)).epoch;

        await store.removeApp('a', T0 + 1);

        for (const room of ['one', 'x:y', 'unkept']) {
          expect(await allLast(store, 'a', room, 100, T0 + 1)).toEqual([]);
          expect((await store.since('a', room, '0-0', T0 + 1)).events).toEqual([]);
        }
        expect(ids(await allLast(store, 'a0', 'one', 100, T0 + 1))).toEqual(others.slice(0, 2));
        const kept = await store.since('b', 'one', '0-0', T0 + 1);
        expect(ids(kept.events)).toEqual(others.slice(2));
        expect(kept.epoch).toBe(epoch);
        expect(kept.truncated).toBe(false);
        // Nothing of the app is aged out later: it is gone already.
        expect(await store.prune(T0 + 200 * HOUR)).toBe(3);
      });

      it('leaves a removed room usable: an app made again with the key starts it empty', async () => {
        await fill('a', 'one', 3, KEEP_ALL, T0);
        await store.removeApp('a', T0 + 1);
        const id = await store.append('a', 'one', { event: 'e', data: '"again"' }, KEEP_ALL, T0 + 2);
        const last = await allLast(store, 'a', 'one', 100, T0 + 2);
        expect(ids(last)).toEqual([id]);
        expect(datas(last)).toEqual(['"again"']);
      });

      it('removes nothing when the app has no room', async () => {
        await fill('b', 'one', 2, KEEP_ALL, T0);
        await store.removeApp('a', T0);
        expect(await allLast(store, 'b', 'one', 100, T0)).toHaveLength(2);
      });
    });

    describe('restart', () => {
      it('keeps events, gaps and rising ids across a reopen', async () => {
        const before = await fill('a', 'lobby', 4, [3, 1], T0 + 1000);
        await fill('b', 'other', 1, KEEP_ALL, T0 + 1000);
        const again = harness.reopen ? await harness.reopen() : store;
        store = again;
        const kept = await allLast(again, 'a', 'lobby', 10, T0 + 1000);
        expect(ids(kept)).toEqual(before.slice(1));
        expect(datas(kept)).toEqual(['"n1"', '"n2"', '"n3"']);
        expect((await again.since('a', 'lobby', before[0] ?? '', T0 + 1000)).truncated).toBe(false);
        expect(await again.since('a', 'lobby', '0-0', T0 + 1000)).toMatchObject({ truncated: true });
        expect(await allLast(again, 'b', 'other', 10, T0 + 1000)).toHaveLength(1);
        // A clock behind the newest id still gives a greater id, and so does a clock in step.
        const behind = await again.append('a', 'lobby', { event: 'e', data: '"behind"' }, [3, 1], T0);
        const inStep = await again.append('a', 'lobby', { event: 'e', data: '"in step"' }, [3, 1], T0 + 1000);
        expectRising([...before, behind, inStep]);
        expect(datas(await allLast(again, 'a', 'lobby', 10, T0 + 1000))).toEqual(['"n3"', '"behind"', '"in step"']);
      });
    });

    describe('epoch', () => {
      /** The room's epoch, as its reads name it. */
      const epochOf = async (app: string, room: string, now = T0): Promise<string> =>
        (await store.last(app, room, 1, now)).epoch;
      /** An epoch that is surely not the given one. */
      const other = (epoch: string): string => `x${epoch}`;

      it('names a non-empty epoch in every read, the same for every read of a room, before and after its events', async () => {
        // A page that joined an empty room resumes with the epoch it was given then: the room's first
        // events must not start another one.
        const empty = await store.since('a', 'lobby', '0-0', T0);
        expect(typeof empty.epoch).toBe('string');
        expect(empty.epoch).not.toBe('');
        expect((await store.last('a', 'lobby', 10, T0)).epoch).toBe(empty.epoch);
        await store.nextId('a', 'lobby', T0);
        const given = await fill('a', 'lobby', 5, [3, 1], T0);
        const reads = [
          await store.since('a', 'lobby', '0-0', T0),
          await store.since('a', 'lobby', given[3] ?? '', T0),
          await store.since('a', 'lobby', given[4] ?? '', T0, { events: 1, bytes: 10 }),
          await store.since('a', 'lobby', given[0] ?? '', T0, undefined, empty.epoch),
          await store.last('a', 'lobby', 2, T0),
          await store.last('a', 'lobby', 100, T0, { events: 1, bytes: 10 }),
          await store.last('a', 'lobby', 0, T0),
        ];
        for (const read of reads) expect(read.epoch).toBe(empty.epoch);
        // Age and pruning drop events, not the stream.
        await store.prune(T0 + 2 * HOUR);
        expect((await store.since('a', 'lobby', given[4] ?? '', T0 + 2 * HOUR)).epoch).toBe(empty.epoch);
        expect(await epochOf('a', 'lobby', T0 + 2 * HOUR)).toBe(empty.epoch);
      });

      it("answers `since` given the room's epoch exactly as without one", async () => {
        const given = await fill('a', 'lobby', 6, [4, 1], T0);
        const epoch = await epochOf('a', 'lobby');
        const future = formatEventId({ ms: T0 + HOUR, seq: 0 });
        const check = async (afterId: string, page?: PageBound): Promise<void> => {
          const without = await store.since('a', 'lobby', afterId, T0, page);
          expect(await store.since('a', 'lobby', afterId, T0, page, epoch)).toEqual(without);
          expect(without.epoch).toBe(epoch);
        };
        for (const afterId of ['0-0', ...given, future]) {
          await check(afterId);
          await check(afterId, { events: 2, bytes: 1_000_000 });
        }
        // A gap the room made (an event it did not keep) still shows.
        await store.nextId('a', 'lobby', T0);
        await check(given[5] ?? '');
        expect((await store.since('a', 'lobby', given[5] ?? '', T0, undefined, epoch)).truncated).toBe(true);
        await check('0-0', undefined);
        expect((await store.since('a', 'nowhere', '0-0', T0, undefined, await epochOf('a', 'nowhere'))).truncated).toBe(
          false,
        );
      });

      it('answers `since` given another epoch truncated (not dropped), with the events after the id', async () => {
        const given = await fill('a', 'lobby', 4, KEEP_ALL, T0);
        const epoch = await epochOf('a', 'lobby');
        const stale = other(epoch);
        // The id belongs to another stream: comparing it with this one's ids is all the store can do.
        const result = await store.since('a', 'lobby', given[1] ?? '', T0, undefined, stale);
        expect(result).toMatchObject({ remaining: 0, truncated: true, dropped: false, epoch });
        expect(ids(result.events)).toEqual(given.slice(2));
        const paged = await store.since('a', 'lobby', given[0] ?? '', T0, { events: 1, bytes: 1_000_000 }, stale);
        expect(paged).toMatchObject({ remaining: 2, truncated: true, dropped: false, epoch });
        expect(ids(paged.events)).toEqual(given.slice(1, 2));
        expect(await store.since('a', 'lobby', given[3] ?? '', T0, undefined, stale)).toEqual({
          events: [],
          remaining: 0,
          truncated: true,
          dropped: false,
          epoch,
        });
        // A room with no history, and one whose rule dropped events after the id: the same answer.
        const nowhere = await store.since('a', 'nowhere', '0-0', T0, undefined, other(await epochOf('a', 'nowhere')));
        expect(nowhere).toMatchObject({ events: [], remaining: 0, truncated: true, dropped: false });
        const small = await fill('a', 'small', 5, [2, 1], T0);
        const trimmed = await store.since(
          'a',
          'small',
          small[0] ?? '',
          T0,
          undefined,
          other(await epochOf('a', 'small')),
        );
        expect(trimmed).toMatchObject({ truncated: true, dropped: false });
        expect(ids(trimmed.events)).toEqual(small.slice(3));
      });

      it('keeps the epoch across a reopen, as it keeps the events', async () => {
        const given = await fill('a', 'lobby', 3, KEEP_ALL, T0);
        const epoch = await epochOf('a', 'lobby');
        const otherRoom = await epochOf('b', 'empty');
        store = harness.reopen ? await harness.reopen() : store;
        expect(await epochOf('a', 'lobby')).toBe(epoch);
        expect(await epochOf('b', 'empty')).toBe(otherRoom);
        const resumed = await store.since('a', 'lobby', given[0] ?? '', T0, undefined, epoch);
        expect(resumed).toMatchObject({ truncated: false, dropped: false, epoch });
        expect(ids(resumed.events)).toEqual(given.slice(1));
      });

      it('starts a new epoch when the data is lost: a reader of the old one is told of the gap', async () => {
        // Only stores whose harness can lose the data (all so far) have anything to check here.
        if (!harness.wipe) return;
        const old = await fill('a', 'lobby', 3, KEEP_ALL, T0);
        await fill('b', 'other', 1, KEEP_ALL, T0);
        const oldEpoch = await epochOf('a', 'lobby');
        const oldOther = await epochOf('b', 'other');
        const oldEmpty = await epochOf('a', 'empty');
        store = (await harness.wipe()) ?? store;
        const later = T0 + MINUTE;
        const epoch = await epochOf('a', 'lobby', later);
        expect(typeof epoch).toBe('string');
        expect(epoch).not.toBe('');
        expect(epoch).not.toBe(oldEpoch);
        expect(await allLast(store, 'a', 'lobby', 10, later)).toEqual([]);
        expect(await store.since('a', 'lobby', old[2] ?? '', later, undefined, oldEpoch)).toEqual({
          events: [],
          remaining: 0,
          truncated: true,
          dropped: false,
          epoch,
        });
        // Every room lost its stream, the empty ones too.
        expect(await epochOf('b', 'other', later)).not.toBe(oldOther);
        expect((await store.since('b', 'other', '0-0', later, undefined, oldOther)).truncated).toBe(true);
        expect(await epochOf('a', 'empty', later)).not.toBe(oldEmpty);
        expect((await store.since('a', 'empty', '0-0', later, undefined, oldEmpty)).truncated).toBe(true);
        // The new stream: a reader of the old epoch gets its events with the gap; one of the new resumes as ever.
        const next = await fill('a', 'lobby', 2, KEEP_ALL, later, 'next');
        const stale = await store.since('a', 'lobby', old[2] ?? '', later, undefined, oldEpoch);
        expect(stale).toMatchObject({ remaining: 0, truncated: true, dropped: false, epoch });
        expect(ids(stale.events)).toEqual(next);
        const resumed = await store.since('a', 'lobby', next[0] ?? '', later, undefined, epoch);
        expect(resumed).toMatchObject({ remaining: 0, truncated: false, dropped: false, epoch });
        expect(ids(resumed.events)).toEqual(next.slice(1));
        expect(await epochOf('a', 'lobby', later)).toBe(epoch);
      });
    });

    describe("the stream's beginning", () => {
      it("answers `since` an id from before the room's stream began truncated unless the reader has the new epoch", async () => {
        // Only stores whose harness can lose the data (all so far) have anything to check here.
        if (!harness.wipe) return;
        const old = await fill('a', 'lobby', 3, KEEP_ALL, T0);
        store = (await harness.wipe()) ?? store;
        const later = T0 + MINUTE;
        // Nothing in the new stream yet: the id names an event of the lost one.
        expect(await store.since('a', 'lobby', old[2] ?? '', later)).toMatchObject({
          events: [],
          remaining: 0,
          truncated: true,
          dropped: false,
        });
        const next = await fill('a', 'lobby', 2, KEEP_ALL, later, 'next');
        // A reader without an epoch (raw protocol, older clients) is told of the gap all the same.
        const stale = await store.since('a', 'lobby', old[1] ?? '', later);
        expect(stale).toMatchObject({ remaining: 0, truncated: true, dropped: false });
        expect(ids(stale.events)).toEqual(next);
        const epoch = stale.epoch;
        // With the new epoch the reader was told of the gap when it got that epoch (and reloaded): its
        // old id is not a gap again, and the new stream's events still come.
        expect(await store.since('a', 'lobby', old[1] ?? '', later, undefined, epoch)).toEqual({
          ...stale,
          truncated: false,
        });
        // An id of the new stream resumes as ever, with or without its epoch.
        for (const given of [undefined, epoch]) {
          const resumed = await store.since('a', 'lobby', next[0] ?? '', later, undefined, given);
          expect(resumed).toMatchObject({ remaining: 0, truncated: false, dropped: false, epoch });
          expect(ids(resumed.events)).toEqual(next.slice(1));
        }
        // `0-0` names no event of any stream: everything the room keeps, with no gap of its own.
        expect(await store.since('a', 'lobby', '0-0', later)).toMatchObject({ truncated: false });
        // A clock behind the stream's beginning still gives ids the stream counts as its own.
        const behind = await store.append('a', 'lobby', { event: 'e', data: '"behind"' }, KEEP_ALL, later - 5000);
        const unkept = await store.nextId('a', 'lobby', later - 5000);
        expectRising([...next, behind, unkept]);
        const fromBehind = await store.since('a', 'lobby', behind, later);
        expect(fromBehind).toMatchObject({ events: [], remaining: 0, dropped: false });
        // Only the unkept id after it makes a gap, as it would without the restart.
        expect(fromBehind.truncated).toBe(true);
        expect((await store.since('a', 'lobby', unkept, later)).truncated).toBe(false);
      });
    });

    describe('concurrency', () => {
      it('gives unique, rising ids to appends interleaved across rooms and apps', async () => {
        const rooms: Array<[string, string]> = [
          ['a', 'r0'],
          ['a', 'r1'],
          ['a', 'r2'],
          ['b', 'r0'],
          ['b', 'r1'],
        ];
        const writersPerRoom = 4;
        const appendsPerWriter = 25;
        // Clocks of different processes disagree a little, and step back now and then.
        const skew = [0, 0, 1, -1, 0, 2, -3, 0];
        const byId = new Map<string, string>();
        const writer = async (app: string, room: string, w: number): Promise<string[]> => {
          const mine: string[] = [];
          for (let i = 0; i < appendsPerWriter; i++) {
            const data = JSON.stringify({ app, room, w, i });
            const now = T0 + i + (skew[(i + w) % skew.length] ?? 0);
            const id = await store.append(app, room, { event: 'e', data }, KEEP_ALL, now);
            const key = `${app}/${room}/${id}`;
            expect(byId.has(key)).toBe(false);
            byId.set(key, data);
            mine.push(id);
          }
          return mine;
        };
        const reader = async (): Promise<void> => {
          for (let i = 0; i < 20; i++) {
            for (const [app, room] of rooms) {
              const seen = await store.since(app, room, '0-0', T0 + 100);
              expectRising(ids(seen.events));
              expect(seen.truncated).toBe(false);
            }
          }
        };
        const tasks = rooms.flatMap(([app, room]) =>
          Array.from({ length: writersPerRoom }, (_, w) => writer(app, room, w).then((mine) => ({ app, room, mine }))),
        );
        const [results] = await Promise.all([Promise.all(tasks), reader()]);
        for (const { mine } of results) expectRising(mine);
        for (const [app, room] of rooms) {
          const kept = await allLast(store, app, room, 1000, T0 + 100);
          expect(kept).toHaveLength(writersPerRoom * appendsPerWriter);
          expectRising(ids(kept));
          const given = results.filter((r) => r.app === app && r.room === room).flatMap((r) => r.mine);
          expect(new Set(ids(kept))).toEqual(new Set(given));
          for (const event of kept) expect(event.data).toBe(byId.get(`${app}/${room}/${event.id}`));
        }
      });
    });
  });
}
