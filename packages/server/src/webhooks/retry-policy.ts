import { LIMITS } from '@realtime/protocol';

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
