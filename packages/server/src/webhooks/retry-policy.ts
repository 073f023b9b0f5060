import { LIMITS } from '@realtime/protocol';
import type { StoredBatch, TryResult } from '../engines/types.js';

/** Webhook timings; the defaults are the spec's (section 8), tests shrink them. */
export interface WebhookTimings {
  /** Events of about this long go out together. */
  windowMs: number;
  /** Most events in one request. */
  maxEvents: number;
  /** Delay before each retry, counted from the end of the previous try. */
  retryDelaysMs: readonly number[];
  /** A batch still failing this long after its first try is given up. */
  giveUpMs: number;
  /** Resend is allowed while retried and this long after. */
  resendWindowMs: number;
  /** The customer's server must answer within this. */
  answerMs: number;
}

export const DEFAULT_TIMINGS: WebhookTimings = {
  windowMs: LIMITS.webhookWindowMs,
  maxEvents: LIMITS.webhookEventsPerRequest,
  retryDelaysMs: LIMITS.webhookRetryDelaysMs,
  giveUpMs: LIMITS.webhookGiveUpMs,
  resendWindowMs: LIMITS.webhookResendWindowMs,
  answerMs: LIMITS.webhookAnswerMs,
};

/**
 * After a failed scheduled try: when to try next, or null to give up. Tries are at 0, then each
 * delay after the previous try ended: nine in all; 24 hours after the first, no more.
 */
export function nextTryAt(
  timings: WebhookTimings,
  failedTries: number,
  firstTryAt: number,
  now: number,
): number | null {
  const delay = timings.retryDelaysMs[failedTries - 1];
  if (delay === undefined) return null;
  // No try is planned past the 24 hours: the batch is given up now instead.
  if (now + delay - firstTryAt > timings.giveUpMs) return null;
  return now + delay;
}

/** A 2xx answer: the customer's server took the batch. */
export function isTaken(result: TryResult): boolean {
  return result.status >= 200 && result.status < 300;
}

/**
 * The batch after one try ended at `now`: taken, or on its schedule. A failed scheduled try counts
 * towards the schedule (retrying, or given up after the last); a failed resend leaves the batch on
 * its schedule (a given-up batch stays given up).
 */
export function afterTry(
  timings: WebhookTimings,
  batch: StoredBatch,
  result: TryResult,
  kind: 'scheduled' | 'resend',
  now: number,
): StoredBatch {
  const next: StoredBatch = {
    ...batch,
    attempts: batch.attempts + 1,
    status: result.status,
    error: result.error ?? null,
    at: now,
    firstTryAt: batch.firstTryAt ?? now,
  };
  if (isTaken(result)) return { ...next, state: 'taken', nextAt: null, doneAt: now };
  if (kind === 'resend') return next;
  const failed = batch.failed + 1;
  const at = nextTryAt(timings, failed, next.firstTryAt ?? now, now);
  return at === null
    ? { ...next, failed, state: 'given_up', nextAt: null, doneAt: now }
    : { ...next, failed, state: 'retrying', nextAt: at, doneAt: null };
}

/** Whether a scheduled try is past the give-up time (the service was down, or behind): given up untried. */
export function isOverdue(timings: WebhookTimings, batch: StoredBatch, now: number): boolean {
  return batch.firstTryAt !== null && now - batch.firstTryAt >= timings.giveUpMs;
}

/** Whether a batch may be resent: not taken, and still on its schedule or within the resend window after. */
export function isResendable(timings: WebhookTimings, batch: StoredBatch, now: number): boolean {
  if (batch.state === 'taken') return false;
  return batch.doneAt === null || now - batch.doneAt <= timings.resendWindowMs;
}
