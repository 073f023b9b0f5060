import type { DeliveryError, DeliveryState } from '@realtime/protocol';
import type { StoredBatch, WebhookStore } from '../types.js';
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

/**
 * The webhook queue in the service's SQLite file: events waiting for a batch, and batches with their
 * tries. Its errors are StoreErrors. Given the file's group commit, an event added inside a write
 * unit is committed with that unit, and a failure to add it fails the unit even when the caller
 * goes on.
 */
export class SqliteWebhookStore implements WebhookStore {
  readonly #commits: { taint(error: unknown): void } | undefined;
  readonly #addEvent;
  readonly #waiting;
  readonly #oldest;
  readonly #deleteUpTo;
  readonly #insertBatch;
  readonly #get;
  readonly #due;
  readonly #list;
  readonly #save;
  readonly #prune;
  readonly #form;
  #batchSeq = 0;

  constructor(db: Db, commits?: { taint(error: unknown): void }) {
    this.#commits = commits;
    this.#addEvent = db.prepare('INSERT INTO webhook_events (app, json) VALUES (?, ?)');
    this.#waiting = db.prepare<[], { app: string; n: number }>(
      'SELECT app, COUNT(*) AS n FROM webhook_events GROUP BY app',
    );
    this.#oldest = db.prepare<[string, number], { seq: number; json: string }>(
      'SELECT seq, json FROM webhook_events WHERE app = ? ORDER BY seq LIMIT ?',
    );
    this.#deleteUpTo = db.prepare('DELETE FROM webhook_events WHERE app = ? AND seq <= ?');
    this.#insertBatch = db.prepare(
      `INSERT INTO webhook_batches (id, app, body, events, state, created_at, next_at, seq)
       VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)`,
    );
    this.#get = db.prepare<[string], BatchRow>('SELECT * FROM webhook_batches WHERE id = ?');
    this.#due = db.prepare<[number, number], BatchRow>(
      'SELECT * FROM webhook_batches WHERE next_at IS NOT NULL AND next_at <= ? ORDER BY next_at, seq LIMIT ?',
    );
    this.#list = db.prepare<[string, number], BatchRow>(
      'SELECT * FROM webhook_batches WHERE app = ? ORDER BY seq DESC LIMIT ?',
    );
    this.#save = db.prepare(
      `UPDATE webhook_batches SET state = @state, attempts = @attempts, failed = @failed, status = @status,
         error = @error, first_try_at = @firstTryAt, at = @at, next_at = @nextAt, done_at = @doneAt WHERE id = @id`,
    );
    this.#prune = db.prepare('DELETE FROM webhook_batches WHERE done_at IS NOT NULL AND done_at < ?');
    const maxSeq = db.prepare<[], { m: number | null }>('SELECT MAX(seq) AS m FROM webhook_batches').get();
    this.#batchSeq = maxSeq?.m ?? 0;
    this.#form = db.transaction((app: string, batchId: string, max: number, now: number) => {
      const rows = this.#oldest.all(app, max);
      const last = rows.at(-1);
      if (!last) return undefined;
      const body = `{"events":[${rows.map((r) => r.json).join(',')}]}`;
      this.#insertBatch.run(batchId, app, body, rows.length, now, now, ++this.#batchSeq);
      this.#deleteUpTo.run(app, last.seq);
      return this.#get.get(batchId);
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

  readonly waiting = withStoreErrors((): Map<string, number> => new Map(this.#waiting.all().map((r) => [r.app, r.n])));

  readonly formBatch = withStoreErrors((app: string, batchId: string, max: number, now: number) => {
    const row = this.#form(app, batchId, max, now);
    return row ? toBatch(row) : undefined;
  });

  readonly addBatch = withStoreErrors((app: string, batchId: string, events: string[], now: number) => {
    this.#insertBatch.run(batchId, app, `{"events":[${events.join(',')}]}`, events.length, now, now, ++this.#batchSeq);
    return toBatch(this.#get.get(batchId) as BatchRow);
  });

  readonly due = withStoreErrors((now: number, limit: number) => this.#due.all(now, limit).map(toBatch));

  readonly get = withStoreErrors((id: string) => {
    const row = this.#get.get(id);
    return row ? toBatch(row) : undefined;
  });

  readonly list = withStoreErrors((app: string, limit: number) => this.#list.all(app, limit).map(toBatch));

  readonly saveTry = withStoreErrors((batch: StoredBatch): void => {
    this.#save.run({
      id: batch.id,
      state: batch.state,
      attempts: batch.attempts,
      failed: batch.failed,
      status: batch.status,
      error: batch.error,
      firstTryAt: batch.firstTryAt,
      at: batch.at,
      nextAt: batch.nextAt,
      doneAt: batch.doneAt,
    });
  });

  readonly prune = withStoreErrors((before: number) => this.#prune.run(before).changes);

  close(): void {
    // The database handle is owned by whoever opened it.
  }
}
