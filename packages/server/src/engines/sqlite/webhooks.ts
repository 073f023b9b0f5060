import type { DeliveryError, DeliveryState } from '@realtime/protocol';
import {
  type StoredBatch,
  TRY_COUNTS_KEPT_MS,
  type TryMinute,
  type TryOutcome,
  type WebhookStats,
  type WebhookStore,
} from '../types.js';
import type { Db } from './db.js';
import { asStoreError, withStoreErrors } from './sqlite-error.js';

interface BatchRow {
  id: string;
  app: string;
  body: string;
  events: number;
  state: string;
  attempts: number;
  failed: number;
  status: number;
  error: string | null;
  created_at: number;
  first_try_at: number | null;
  at: number | null;
  next_at: number | null;
  done_at: number | null;
  lease_holder: string | null;
  lease_until: number | null;
}

function toBatch(row: BatchRow): StoredBatch {
  return {
    id: row.id,
    app: row.app,
    body: row.body,
    events: row.events,
    state: row.state as DeliveryState,
    attempts: row.attempts,
    failed: row.failed,
    status: row.status,
    error: row.error as DeliveryError | null,
    createdAt: row.created_at,
    firstTryAt: row.first_try_at,
    at: row.at,
    nextAt: row.next_at,
    doneAt: row.done_at,
  };
}

const bodyOf = (events: readonly string[]) => `{"events":[${events.join(',')}]}`;

/**
 * Adds the lease columns to a file made before leases (db.ts creates the table without them). Two
 * processes opening the file at once may both try: the loser finds the column there.
 */
function addLeaseColumns(db: Db): void {
  for (const [column, type] of [
    ['lease_holder', 'TEXT'],
    ['lease_until', 'INTEGER'],
  ] as const) {
    const has = () =>
      db
        .prepare<[], { name: string }>('PRAGMA table_info(webhook_batches)')
        .all()
        .some((c) => c.name === column);
    if (has()) continue;
    try {
      db.exec(`ALTER TABLE webhook_batches ADD COLUMN ${column} ${type}`);
    } catch (error) {
      if (!has()) throw error;
    }
  }
}

const MINUTE_MS = 60_000;

/** Tries counted per app, minute and outcome (the dashboard's chart); made here, not in db.ts, as its own concern. */
const TRIES_SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_tries (
  app TEXT NOT NULL,
  minute INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (app, minute, outcome)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_tries_minute ON webhook_tries (minute);
`;

/**
 * The webhook queue in the service's SQLite file: events waiting for a batch, and batches with their
 * tries and leases. Any number of processes may share the file: every step that reads and then
 * writes is one IMMEDIATE transaction (the file's write lock taken first), so an event goes into
 * one batch and a lease to one holder. Its errors are StoreErrors.
 *
 * Given the file's group commit, an event added inside a write unit is committed with that unit,
 * and a failure to add it fails the unit even when the caller goes on.
 */
export class SqliteWebhookStore implements WebhookStore {
  readonly #commits: { taint(error: unknown): void } | undefined;
  readonly #addEvent;
  readonly #waiting;
  readonly #oldest;
  readonly #deleteUpTo;
  readonly #insertBatch;
  readonly #get;
  readonly #dueIds;
  readonly #lease;
  readonly #list;
  readonly #save;
  readonly #saveAndCount;
  readonly #tries;
  readonly #prune;
  readonly #form;
  readonly #add;
  readonly #claimDue;
  readonly #claim;
  readonly #stats;
  readonly #removeApp;

  constructor(db: Db, commits?: { taint(error: unknown): void }) {
    this.#commits = commits;
    addLeaseColumns(db);
    this.#addEvent = db.prepare('INSERT INTO webhook_events (app, json) VALUES (?, ?)');
    this.#waiting = db.prepare<[], { app: string; n: number }>(
      'SELECT app, COUNT(*) AS n FROM webhook_events GROUP BY app',
    );
    this.#oldest = db.prepare<[string, number], { seq: number; json: string }>(
      'SELECT seq, json FROM webhook_events WHERE app = ? ORDER BY seq LIMIT ?',
    );
    this.#deleteUpTo = db.prepare('DELETE FROM webhook_events WHERE app = ? AND seq <= ?');
    // `seq` orders batches as made: the next rowid, read in the statement that inserts.
    this.#insertBatch = db.prepare<[string, string, string, number, number, number, string | null, number | null]>(
      `INSERT INTO webhook_batches (id, app, body, events, state, created_at, next_at, lease_holder, lease_until, seq)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, (SELECT COALESCE(MAX(rowid), 0) + 1 FROM webhook_batches))`,
    );
    this.#get = db.prepare<[string], BatchRow>('SELECT * FROM webhook_batches WHERE id = ?');
    this.#dueIds = db.prepare<[number, number, number], { id: string }>(
      `SELECT id FROM webhook_batches
       WHERE next_at IS NOT NULL AND next_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
       ORDER BY next_at, seq LIMIT ?`,
    );
    this.#lease = db.prepare<[string, number, string]>(
      'UPDATE webhook_batches SET lease_holder = ?, lease_until = ? WHERE id = ?',
    );
    this.#list = db.prepare<[string, number], BatchRow>(
      'SELECT * FROM webhook_batches WHERE app = ? ORDER BY seq DESC LIMIT ?',
    );
    // Only the holder records a try: a holder whose lease ran out and passed to another changes nothing.
    this.#save = db.prepare(
      `UPDATE webhook_batches SET state = @state, attempts = @attempts, failed = @failed, status = @status,
         error = @error, first_try_at = @firstTryAt, at = @at, next_at = @nextAt, done_at = @doneAt,
         lease_holder = NULL, lease_until = NULL
       WHERE id = @id AND lease_holder = @holder`,
    );
    this.#prune = db.prepare('DELETE FROM webhook_batches WHERE done_at IS NOT NULL AND done_at < ?');
    db.exec(TRIES_SCHEMA);
    const count = db.prepare<[string, number, string]>(
      `INSERT INTO webhook_tries (app, minute, outcome, n) VALUES (?, ?, ?, 1)
       ON CONFLICT (app, minute, outcome) DO UPDATE SET n = n + 1`,
    );
    const forget = db.prepare<[number]>('DELETE FROM webhook_tries WHERE minute < ?');
    this.#tries = db.prepare<[string, number, number], { minute: number; outcome: string; n: number }>(
      'SELECT minute, outcome, n FROM webhook_tries WHERE app = ? AND minute >= ? AND minute <= ? ORDER BY minute',
    );
    // The try counted in the same transaction as its result; counts older than a day go then too.
    // A batch removed with its app meanwhile is counted no more.
    this.#saveAndCount = db.transaction((values: Record<string, unknown>, app: string, at: number, outcome: string) => {
      this.#save.run(values);
      if (this.#get.get(values.id as string) === undefined) return;
      const minute = Math.floor(at / MINUTE_MS) * MINUTE_MS;
      count.run(app, minute, outcome);
      forget.run(minute - TRY_COUNTS_KEPT_MS);
    });

    this.#form = db.transaction((app: string, batchId: string, max: number, now: number) => {
      const rows = this.#oldest.all(app, max);
      const last = rows.at(-1);
      if (!last) return undefined;
      this.#insertBatch.run(batchId, app, bodyOf(rows.map((r) => r.json)), rows.length, now, now, null, null);
      this.#deleteUpTo.run(app, last.seq);
      return this.#get.get(batchId);
    });
    this.#add = db.transaction(
      (app: string, batchId: string, events: string[], now: number, holder: string, until: number) => {
        this.#insertBatch.run(batchId, app, bodyOf(events), events.length, now, now, holder, until);
        return this.#get.get(batchId);
      },
    );
    this.#claimDue = db.transaction((now: number, limit: number, holder: string, until: number) => {
      const rows: BatchRow[] = [];
      for (const { id } of this.#dueIds.all(now, now, limit)) {
        this.#lease.run(holder, until, id);
        const row = this.#get.get(id);
        if (row) rows.push(row);
      }
      return rows;
    });
    this.#claim = db.transaction((id: string, now: number, holder: string, until: number) => {
      const row = this.#get.get(id);
      if (!row) return undefined;
      if (row.lease_until !== null && row.lease_until > now) return 'busy' as const;
      this.#lease.run(holder, until, id);
      return row;
    });

    const removeEvents = db.prepare<[string]>('DELETE FROM webhook_events WHERE app = ?');
    const removeBatches = db.prepare<[string]>('DELETE FROM webhook_batches WHERE app = ?');
    const removeTries = db.prepare<[string]>('DELETE FROM webhook_tries WHERE app = ?');
    this.#removeApp = db.transaction((app: string) => {
      removeEvents.run(app);
      removeBatches.run(app);
      removeTries.run(app);
    });

    const countWaiting = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM webhook_events');
    // An event's `at` is inside its JSON; a batch's events are at most one window older than the batch.
    const firstEvent = db.prepare<[], { at: number | null }>(
      "SELECT json_extract(json, '$.at') AS at FROM webhook_events ORDER BY seq LIMIT 1",
    );
    const firstBatch = db.prepare<[], { at: number | null }>(
      "SELECT MIN(created_at) AS at FROM webhook_batches WHERE state IN ('pending', 'retrying')",
    );
    const byState = db.prepare<[], { state: string; n: number }>(
      'SELECT state, COUNT(*) AS n FROM webhook_batches GROUP BY state',
    );
    this.#stats = db.transaction((now: number): WebhookStats => {
      const starts = [firstEvent.get()?.at, firstBatch.get()?.at].filter((at): at is number => typeof at === 'number');
      const batches: WebhookStats['batches'] = {};
      for (const row of byState.all()) batches[row.state as DeliveryState] = row.n;
      return {
        waiting: countWaiting.get()?.n ?? 0,
        oldestWaitingMs: starts.length === 0 ? 0 : Math.max(0, now - Math.min(...starts)),
        batches,
      };
    });
  }

  addEvent(app: string, json: string): void {
    try {
      this.#addEvent.run(app, json);
    } catch (error) {
      this.#commits?.taint(error);
      throw asStoreError(error);
    }
  }

  // Arrow fields, not methods: a wrapper made with Object.create (tests that fail a store) still works.
  readonly waiting = withStoreErrors((): Map<string, number> => new Map(this.#waiting.all().map((r) => [r.app, r.n])));

  readonly formBatch = withStoreErrors((app: string, batchId: string, max: number, now: number) => {
    const row = this.#form.immediate(app, batchId, max, now);
    return row ? toBatch(row) : undefined;
  });

  readonly addBatch = withStoreErrors(
    (app: string, batchId: string, events: string[], now: number, lease: { holder: string; ms: number }) =>
      toBatch(this.#add.immediate(app, batchId, events, now, lease.holder, now + lease.ms) as BatchRow),
  );

  readonly claimDue = withStoreErrors((now: number, limit: number, lease: { holder: string; ms: number }) =>
    this.#claimDue.immediate(now, limit, lease.holder, now + lease.ms).map(toBatch),
  );

  readonly claim = withStoreErrors((id: string, now: number, lease: { holder: string; ms: number }) => {
    const row = this.#claim.immediate(id, now, lease.holder, now + lease.ms);
    return row === undefined || row === 'busy' ? row : toBatch(row);
  });

  readonly get = withStoreErrors((id: string) => {
    const row = this.#get.get(id);
    return row ? toBatch(row) : undefined;
  });

  readonly list = withStoreErrors((app: string, limit: number) => this.#list.all(app, limit).map(toBatch));

  readonly saveTry = withStoreErrors((batch: StoredBatch, holder: string, tried?: TryOutcome): void => {
    const values = {
      id: batch.id,
      holder,
      state: batch.state,
      attempts: batch.attempts,
      failed: batch.failed,
      status: batch.status,
      error: batch.error,
      firstTryAt: batch.firstTryAt,
      at: batch.at,
      nextAt: batch.nextAt,
      doneAt: batch.doneAt,
    };
    if (tried === undefined) this.#save.run(values);
    else this.#saveAndCount.immediate(values, batch.app, batch.at ?? 0, tried);
  });

  readonly tryCounts = withStoreErrors((app: string, sinceMs: number, nowMs: number): TryMinute[] => {
    const from = Math.max(Math.floor(sinceMs / MINUTE_MS), Math.floor((nowMs - TRY_COUNTS_KEPT_MS) / MINUTE_MS) + 1);
    const minutes: TryMinute[] = [];
    for (const row of this.#tries.all(app, from * MINUTE_MS, nowMs)) {
      let last = minutes.at(-1);
      if (last?.at !== row.minute) {
        last = { at: row.minute, outcomes: {} };
        minutes.push(last);
      }
      last.outcomes[row.outcome as TryOutcome] = row.n;
    }
    return minutes;
  });

  readonly prune = withStoreErrors((before: number) => this.#prune.run(before).changes);

  readonly stats = withStoreErrors((now: number) => this.#stats(now));

  readonly removeApp = withStoreErrors((app: string): void => {
    this.#removeApp.immediate(app);
  });

  close(): void {
    // The database handle is owned by whoever opened it.
  }
}
