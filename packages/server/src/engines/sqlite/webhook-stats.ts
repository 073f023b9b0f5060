import type { Db } from './db.js';

export interface SqliteWebhookStats {
  waiting: number;
  oldestWaitingMs: number;
  batches: Record<string, number>;
}

/**
 * What the webhook queue holds, for metrics: events not yet batched, batches by state, and the age
 * of the oldest event not yet delivered (an event's `at` is inside its JSON; a batch's events are
 * at most one window older than the batch).
 */
export function readWebhookStats(db: Db, now: number): SqliteWebhookStats {
  const waiting = db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM webhook_events').get()?.n ?? 0;
  const firstEvent = db
    .prepare<[], { at: number | null }>(
      "SELECT json_extract(json, '$.at') AS at FROM webhook_events ORDER BY seq LIMIT 1",
    )
    .get()?.at;
  const firstBatch = db
    .prepare<[], { at: number | null }>(
      "SELECT MIN(created_at) AS at FROM webhook_batches WHERE state IN ('pending', 'retrying')",
    )
    .get()?.at;
  const starts = [firstEvent, firstBatch].filter((at): at is number => typeof at === 'number');
  const oldestWaitingMs = starts.length === 0 ? 0 : Math.max(0, now - Math.min(...starts));
  const batches: Record<string, number> = {};
  for (const row of db
    .prepare<[], { state: string; n: number }>('SELECT state, COUNT(*) AS n FROM webhook_batches GROUP BY state')
    .all()) {
    batches[row.state] = row.n;
  }
  return { waiting, oldestWaitingMs, batches };
}
