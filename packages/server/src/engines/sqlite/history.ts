import type { HistoryRule } from '@realtime/protocol';
import { compareEventIds, type EventId, formatEventId, nextEventId, parseEventId } from '../event-id.js';
import type { HistoryPage, HistoryStore, KeptCount, KeptEvent, PageBound, ResumeResult } from '../types.js';
import { type Db, dbEpoch } from './db.js';
import type { GroupHooks } from './group-commit.js';

/** A group commit the store can leave its trimming to: once per room, just before the group commits. */
export interface TrimGroup {
  readonly writing: boolean;
  addHooks(hooks: GroupHooks): void;
}

/** A room's trim waiting for the commit: how many newest events may stay, after how many appends. */
interface PendingTrim {
  app: string;
  room: string;
  keep: number;
  appends: number;
  now: number;
}

interface RoomRow {
  last_ms: number;
  last_seq: number;
  dropped_ms: number;
  dropped_seq: number;
}

interface EventRow {
  ms: number;
  seq: number;
  event: string;
  data: string;
  sender: string | null;
}

const HOUR_MS = 3_600_000;
const KEYS = 'history_keys';
const ISSUED_ROOMS_KEPT = 100_000;
const WHOLE: PageBound = { events: Number.POSITIVE_INFINITY, bytes: Number.POSITIVE_INFINITY };

function toKept(row: EventRow): KeptEvent {
  const kept: KeptEvent = { id: `${row.ms}-${row.seq}`, event: row.event, data: row.data };
  if (row.sender !== null) kept.from = row.sender;
  return kept;
}

/**
 * Reads rows one at a time up to the bound: rows past it are never read, so a page of a room of
 * large events costs the page's bytes, not the room's.
 */
function readPage(rows: IterableIterator<EventRow>, bound: PageBound): KeptEvent[] {
  const events: KeptEvent[] = [];
  let bytes = 0;
  for (const row of rows) {
    // String length stands in for bytes: "about" the bound is enough, and it costs no pass over the data.
    const size = row.data.length + row.event.length;
    if (events.length > 0 && bytes + size > bound.bytes) break;
    events.push(toKept(row));
    bytes += size;
    if (events.length >= bound.events) break;
  }
  // Leaving the loop early ends the statement (the iterator's return), so rows past the bound are never read.
  return events;
}

/**
 * Room history in SQLite. Each append is one transaction: next id from the room row, insert,
 * trim to the rule. The room row remembers the newest id dropped, which tells `since` about gaps.
 *
 * Epoch: one for the whole file (made with it, see dbEpoch), not one per room. A room's stream can
 * only be lost with the file here: nothing is evicted, and what the rule drops is recorded as a
 * gap. A deleted or replaced file is a new epoch for every room, the same file reopened keeps it.
 * A file restored from an older copy of itself keeps its epoch too: that loss goes unseen (a page's
 * id past the room's newest reads as nothing missed).
 *
 * The file also knows when its streams began (meta `began`: the earliest clock reading of any history
 * call on it, so every id it gives is at or above it): an id below it is of a lost file, and `since`
 * it is truncated for a reader without an epoch (one with an epoch is told by the epoch instead).
 */
export class SqliteHistoryStore implements HistoryStore {
  readonly #db: Db;
  readonly #epoch: string;
  readonly #room;
  readonly #insertRoom;
  readonly #setLast;
  readonly #insert;
  readonly #overLimit;
  readonly #expired;
  readonly #deleteUpTo;
  readonly #setDropped;
  readonly #after;
  readonly #countAfter;
  readonly #countRoom;
  readonly #nthNewest;
  readonly #from;
  readonly #expiredRooms;
  readonly #appendTx;
  readonly #issued = new Map<string, EventId>();
  readonly #group: TrimGroup | undefined;
  /**
   * Rooms appended to in the open group: how many newest events may stay (the least, over its
   * appends, of the append's limit plus the appends after it: what trimming after each would keep).
   */
  readonly #toTrim = new Map<string, PendingTrim>();
  /** The same, for the unit being written: joins #toTrim only if the unit is kept. */
  readonly #unitTrims = new Map<string, PendingTrim>();
  /** The newest id given to an event the room did not keep, per room (memory: lost on restart). */
  readonly #unkept = new Map<string, EventId>();
  /** The highest id issued in any room so far. */
  #floor: EventId | undefined;
  /** The floor when rooms were last forgotten from memory: such a room starts above it. */
  #forgotten: EventId | undefined;
  readonly #sinceTx;
  readonly #lastTx;
  readonly #countTx;
  /** Where the file's streams began (ms); undefined until read, 0 for a file without the mark. */
  #began: number | undefined;
  readonly #readBegan;
  readonly #stampBegan;
  readonly #lowerBegan;
  readonly #removeAppTx;

  constructor(db: Db, options: { group?: TrimGroup } = {}) {
    this.#group = options.group;
    this.#group?.addHooks({
      unitEnded: (kept) => {
        if (kept) for (const [key, trim] of this.#unitTrims) this.#toTrim.set(key, after(this.#toTrim.get(key), trim));
        this.#unitTrims.clear();
      },
      beforeCommit: () => this.#trimGroup(),
      groupFailed: () => {
        this.#unitTrims.clear();
        this.#toTrim.clear();
      },
    });
    this.#db = db;
    this.#epoch = dbEpoch(db);
    this.#readBegan = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'began'");
    this.#stampBegan = db.prepare("UPDATE meta SET value = ? WHERE key = 'began' AND value = ''");
    this.#lowerBegan = db.prepare(
      "UPDATE meta SET value = ? WHERE key = 'began' AND value <> '0' AND CAST(value AS INTEGER) > ?",
    );
    // Rows hold data of up to 1 MB, and stepping over a row in the table reads all of it: every query
    // that walks a room's events (counts, offsets, expiry) walks this index of their keys instead.
    db.exec(`CREATE INDEX IF NOT EXISTS ${KEYS} ON history (app, room, ms, seq, expires_at)`);
    this.#room = db.prepare<[string, string], RoomRow>(
      'SELECT last_ms, last_seq, dropped_ms, dropped_seq FROM rooms WHERE app = ? AND room = ?',
    );
    this.#insertRoom = db.prepare('INSERT INTO rooms (app, room, last_ms, last_seq) VALUES (?, ?, ?, ?)');
    this.#setLast = db.prepare('UPDATE rooms SET last_ms = ?, last_seq = ? WHERE app = ? AND room = ?');
    this.#insert = db.prepare(
      'INSERT INTO history (app, room, ms, seq, event, data, sender, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // The newest event beyond the `limit` newest: everything up to it goes.
    this.#overLimit = db.prepare<[string, string, number], { ms: number; seq: number }>(
      `SELECT ms, seq FROM history INDEXED BY ${KEYS} WHERE app = ? AND room = ?
         ORDER BY ms DESC, seq DESC LIMIT 1 OFFSET ?`,
    );
    this.#expired = db.prepare<[string, string, number], { ms: number; seq: number }>(
      `SELECT ms, seq FROM history INDEXED BY ${KEYS} WHERE app = ? AND room = ? AND expires_at <= ?
         ORDER BY ms DESC, seq DESC LIMIT 1`,
    );
    this.#deleteUpTo = db.prepare(
      'DELETE FROM history WHERE app = ? AND room = ? AND (ms < ? OR (ms = ? AND seq <= ?))',
    );
    this.#setDropped = db.prepare(
      `UPDATE rooms SET dropped_ms = ?, dropped_seq = ? WHERE app = ? AND room = ?
         AND (dropped_ms < ? OR (dropped_ms = ? AND dropped_seq < ?))`,
    );
    this.#after = db.prepare<[string, string, number, number], EventRow>(
      `SELECT ms, seq, event, data, sender FROM history WHERE app = ? AND room = ?
         AND (ms, seq) > (?, ?) ORDER BY ms, seq`,
    );
    this.#countAfter = db.prepare<[string, string, number, number], { n: number }>(
      `SELECT COUNT(*) AS n FROM history INDEXED BY ${KEYS} WHERE app = ? AND room = ? AND (ms, seq) > (?, ?)`,
    );
    this.#countRoom = db.prepare<[string, string], { n: number }>(
      `SELECT COUNT(*) AS n FROM history INDEXED BY ${KEYS} WHERE app = ? AND room = ?`,
    );
    // The oldest of the newest n: where a `last` read starts.
    this.#nthNewest = db.prepare<[string, string, number], { ms: number; seq: number }>(
      `SELECT ms, seq FROM history INDEXED BY ${KEYS} WHERE app = ? AND room = ?
         ORDER BY ms DESC, seq DESC LIMIT 1 OFFSET ?`,
    );
    this.#from = db.prepare<[string, string, number, number], EventRow>(
      `SELECT ms, seq, event, data, sender FROM history WHERE app = ? AND room = ?
         AND (ms, seq) >= (?, ?) ORDER BY ms, seq`,
    );
    this.#expiredRooms = db.prepare<[number], { app: string; room: string }>(
      'SELECT DISTINCT app, room FROM history WHERE expires_at <= ?',
    );
    this.#appendTx = db.transaction(
      (
        app: string,
        room: string,
        entry: { event: string; data: string; from?: string },
        rule: HistoryRule,
        now: number,
      ) => {
        const row = this.#room.get(app, room);
        const stored = row ? { ms: row.last_ms, seq: row.last_seq } : undefined;
        this.#beganAt(now);
        const id = nextEventId(this.#later(this.#issued.get(`${app}:${room}`) ?? this.#forgotten, stored), now);
        this.#remember(app, room, id);
        if (row) this.#setLast.run(id.ms, id.seq, app, room);
        else this.#insertRoom.run(app, room, id.ms, id.seq);
        const [limit, hours] = rule;
        this.#insert.run(app, room, id.ms, id.seq, entry.event, entry.data, entry.from ?? null, now + hours * HOUR_MS);
        if (this.#group?.writing) {
          // Trimmed once per room when the group commits: the same result, one trim for many appends.
          const key = `${app}\u0000${room}`;
          this.#unitTrims.set(key, after(this.#unitTrims.get(key), { app, room, keep: limit, appends: 1, now }));
        } else this.#trim(app, room, limit, now);
        return formatEventId(id);
      },
    );
    // A read's count and its page come from one snapshot, after what aged out was dropped.
    this.#sinceTx = db.transaction(
      (app: string, room: string, afterId: string, now: number, page: PageBound, epoch?: string): ResumeResult =>
        this.#since(app, room, afterId, now, page, epoch),
    );
    this.#lastTx = db.transaction(
      (app: string, room: string, count: number, now: number, page: PageBound): HistoryPage =>
        this.#last(app, room, count, now, page),
    );
    this.#countTx = db.transaction((app: string, room: string, now: number): KeptCount => {
      this.#beganAt(now);
      const kept = this.#keptRoom(app, room, now) ? (this.#countRoom.get(app, room)?.n ?? 0) : 0;
      return { count: kept, epoch: this.#epoch };
    });
    const deleteEvents = db.prepare('DELETE FROM history WHERE app = ?');
    const deleteRooms = db.prepare('DELETE FROM rooms WHERE app = ?');
    this.#removeAppTx = db.transaction((app: string) => {
      deleteEvents.run(app);
      deleteRooms.run(app);
    });
  }

  /**
   * Ids of events the room does not keep come from memory (no write per event), from the same
   * sequence as kept ones: the last id issued per room, seeded from the room row on first use.
   */
  nextId(app: string, room: string, nowMs: number): string {
    const key = `${app}:${room}`;
    let last = this.#issued.get(key);
    if (!last) {
      const row = this.#room.get(app, room);
      last = this.#later(row ? { ms: row.last_ms, seq: row.last_seq } : undefined, this.#forgotten);
    }
    this.#beganAt(nowMs);
    const id = nextEventId(last, nowMs);
    this.#remember(app, room, id);
    if (this.#unkept.size >= ISSUED_ROOMS_KEPT) this.#unkept.clear();
    this.#unkept.set(key, id);
    return formatEventId(id);
  }

  /**
   * Where the file's streams began: stamped by the first call on a new file, and moved back by a call
   * whose clock is behind it (a clock that stepped back), so every id the file gives is at or above it.
   */
  #beganAt(nowMs: number): number {
    if (this.#began === undefined) {
      this.#stampBegan.run(String(Math.floor(nowMs)));
      this.#began = Number(this.#readBegan.get()?.value ?? '0') || 0;
    }
    if (this.#began > 0 && nowMs < this.#began) {
      this.#began = Math.floor(nowMs);
      this.#lowerBegan.run(String(this.#began), this.#began);
    }
    return this.#began;
  }

  #remember(app: string, room: string, id: EventId): void {
    // Bounded: a forgotten room starts above every id issued so far, so its ids still rise.
    if (this.#issued.size >= ISSUED_ROOMS_KEPT) {
      this.#issued.clear();
      this.#forgotten = this.#floor;
    }
    this.#issued.set(`${app}:${room}`, id);
    this.#floor = this.#later(this.#floor, id);
  }

  #later(a: EventId | undefined, b: EventId | undefined): EventId | undefined {
    if (!a) return b;
    if (!b) return a;
    return a.ms > b.ms || (a.ms === b.ms && a.seq > b.seq) ? a : b;
  }

  #drop(app: string, room: string, upTo: EventId): void {
    this.#deleteUpTo.run(app, room, upTo.ms, upTo.ms, upTo.seq);
    this.#setDropped.run(upTo.ms, upTo.seq, app, room, upTo.ms, upTo.ms, upTo.seq);
  }

  /** Drops what the room no longer keeps: beyond the `keep` newest, or past its age. */
  #trim(app: string, room: string, keep: number, now: number): void {
    const beyond = this.#overLimit.get(app, room, keep);
    if (beyond) this.#drop(app, room, beyond);
    this.#dropExpired(app, room, now);
  }

  #trimGroup(): void {
    for (const { app, room, keep, now } of this.#toTrim.values()) this.#trim(app, room, keep, now);
    this.#toTrim.clear();
  }

  #dropExpired(app: string, room: string, now: number): void {
    const newestExpired = this.#expired.get(app, room, now);
    if (newestExpired) this.#drop(app, room, newestExpired);
  }

  append(
    app: string,
    room: string,
    entry: { event: string; data: string; from?: string },
    rule: HistoryRule,
    nowMs: number,
  ): string {
    return this.#appendTx(app, room, entry, rule, nowMs);
  }

  since(
    app: string,
    room: string,
    afterId: string,
    nowMs: number,
    page: PageBound = WHOLE,
    epoch?: string,
  ): ResumeResult {
    return this.#sinceTx(app, room, afterId, nowMs, page, epoch);
  }

  #since(
    app: string,
    room: string,
    afterId: string,
    nowMs: number,
    page: PageBound,
    readerEpoch: string | undefined,
  ): ResumeResult {
    const epoch = this.#epoch;
    const after = parseEventId(afterId) ?? { ms: -1, seq: -1 };
    const row = this.#keptRoom(app, room, nowMs);
    // An id of another stream tells nothing about this one: a gap, though not one this stream dropped.
    // The events after the id still come: the reader's best effort, not a resume.
    const foreign = readerEpoch !== undefined && readerEpoch !== epoch;
    // Missed: an event dropped after `since`, or one after it that the room never kept.
    const unkept = this.#unkept.get(`${app}:${room}`);
    const missedUnkept = unkept !== undefined && compareEventIds(unkept, after) > 0;
    // Without the epoch, an id from before the file's streams began is of a lost one (0-0 names none:
    // "from the start"). A file never keeps events across an epoch change, so nothing kept is below it;
    // a reader with the epoch got it after the loss and was told then.
    const began = this.#beganAt(nowMs);
    const before = readerEpoch === undefined && after.ms > 0 && after.ms < began;
    if (!row) return { events: [], remaining: 0, truncated: foreign || missedUnkept || before, dropped: false, epoch };
    const where = [app, room, after.ms, after.seq] as const;
    const total = this.#countAfter.get(...where)?.n ?? 0;
    const events = total === 0 ? [] : readPage(this.#after.iterate(...where), page);
    const dropped =
      !foreign && (row.dropped_ms > after.ms || (row.dropped_ms === after.ms && row.dropped_seq > after.seq));
    const truncated = foreign || missedUnkept || dropped || before;
    return { events, remaining: total - events.length, truncated, dropped, epoch };
  }

  /** Drops what aged out (always a prefix, so kept events never have a hole), then reads the room row. */
  #keptRoom(app: string, room: string, nowMs: number): RoomRow | undefined {
    this.#dropExpired(app, room, nowMs);
    return this.#room.get(app, room);
  }

  last(app: string, room: string, count: number, nowMs: number, page: PageBound = WHOLE): HistoryPage {
    if (count <= 0) return { events: [], remaining: 0, epoch: this.#epoch };
    return this.#lastTx(app, room, count, nowMs, page);
  }

  #last(app: string, room: string, count: number, nowMs: number, page: PageBound): HistoryPage {
    const epoch = this.#epoch;
    this.#beganAt(nowMs);
    if (!this.#keptRoom(app, room, nowMs)) return { events: [], remaining: 0, epoch };
    const total = Math.min(count, this.#countRoom.get(app, room)?.n ?? 0);
    const start = total === 0 ? undefined : this.#nthNewest.get(app, room, total - 1);
    if (!start) return { events: [], remaining: 0, epoch };
    const events = readPage(this.#from.iterate(app, room, start.ms, start.seq), page);
    return { events, remaining: total - events.length, epoch };
  }

  count(app: string, room: string, nowMs: number): KeptCount {
    return this.#countTx(app, room, nowMs);
  }

  prune(nowMs: number): number {
    let removed = 0;
    const tx = this.#db.transaction(() => {
      for (const { app, room } of this.#expiredRooms.all(nowMs)) {
        const newest = this.#expired.get(app, room, nowMs);
        if (newest) {
          const result = this.#deleteUpTo.run(app, room, newest.ms, newest.ms, newest.seq);
          this.#setDropped.run(newest.ms, newest.seq, app, room, newest.ms, newest.ms, newest.seq);
          removed += result.changes;
        }
      }
    });
    tx();
    return removed;
  }

  /**
   * One transaction for both tables. What memory holds of the app's rooms stays: ids issued later
   * still rise past the removed ones in this process.
   */
  removeApp(app: string): void {
    this.#removeAppTx(app);
  }

  close(): void {
    // The database handle is owned by whoever opened it.
  }
}

/**
 * The trim of `earlier` appends followed by `later` ones: the earlier bound grows by the later
 * appends, and the later bound holds as is (what trimming after each append would have kept).
 */
function after(earlier: PendingTrim | undefined, later: PendingTrim): PendingTrim {
  if (!earlier) return later;
  return {
    app: later.app,
    room: later.room,
    keep: Math.min(earlier.keep + later.appends, later.keep),
    appends: earlier.appends + later.appends,
    now: Math.max(earlier.now, later.now),
  };
}
