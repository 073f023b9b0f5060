import { createHash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { LIMITS } from '@realtime/protocol';
import { EmitIncomplete } from '../core/emit.js';
import { StoreError } from '../engines/store-error.js';
import { ApiError } from './api-error.js';
import type { ApiDeps, ApiRequest } from './context.js';

/** The request header that makes an emit or batch idempotent. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** How long a reservation holds while its request is served (a node that died frees it then). */
export const IDEMPOTENCY_HOLD_MS = 30_000;
/** How long a duplicate waits for the first request's answer before it is refused as in flight. */
const IN_FLIGHT_WAIT_MS = 2000;
const IN_FLIGHT_POLL_MS = 50;
/** Printable ASCII, space to tilde. */
const PRINTABLE = /^[\x20-\x7e]+$/;

/** The request's Idempotency-Key; undefined without one. Refused (`bad_request`) when malformed. */
export function idempotencyKey(headers: IncomingHttpHeaders | undefined): string | undefined {
  const value = headers?.[IDEMPOTENCY_HEADER];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ApiError('bad_request', 'the Idempotency-Key header is sent more than once');
  if (value.length === 0 || value.length > LIMITS.idempotencyKeyMaxLength || !PRINTABLE.test(value)) {
    throw new ApiError(
      'bad_request',
      `the Idempotency-Key header must be 1 to ${LIMITS.idempotencyKeyMaxLength} printable ASCII characters`,
    );
  }
  return value;
}

/** What a request stands for: its route and its body, byte for byte. */
function fingerprint(route: string, body: Buffer): string {
  return createHash('sha256').update(route).update('\n').update(body).digest('hex');
}

/**
 * Serves an emit once per Idempotency-Key: the key is reserved before `run` delivers anything, and
 * holds the answer for 5 minutes after, so a retry with the same key and body (on any node) gets the
 * same answer and delivers nothing. Another body under the key is `idempotency_conflict`; so is a
 * duplicate whose first request is still in flight after a short wait. Without the header, `run` as is.
 * Called once the request is checked whole: a refused request reserves nothing.
 */
export async function idempotent(
  request: ApiRequest,
  deps: Pick<ApiDeps, 'idempotency' | 'log' | 'now'> & { inFlightWaitMs?: number },
  route: string,
  run: () => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  const key = idempotencyKey(request.headers);
  if (key === undefined) return run();
  const app = request.app.key;
  const print = fingerprint(route, request.body);
  // This request's own hold: if it outlives its hold and a retry takes the key, this request's late
  // answer or release must not land on the retry's.
  const owner = randomUUID();
  for (let waited = 0; ; waited += IN_FLIGHT_POLL_MS) {
    const now = deps.now();
    const found = await deps.idempotency.reserve(app, key, print, owner, now + IDEMPOTENCY_HOLD_MS, now);
    if (found.state === 'reserved') break;
    if (found.state === 'answered') return JSON.parse(found.answer) as Record<string, unknown>;
    if (found.state === 'conflict') {
      throw new ApiError(
        'idempotency_conflict',
        'this Idempotency-Key was used with another request body (or route) in the last 5 minutes',
      );
    }
    if (waited >= (deps.inFlightWaitMs ?? IN_FLIGHT_WAIT_MS)) {
      throw new ApiError(
        'idempotency_conflict',
        'a request with this Idempotency-Key is still in flight: retry once it answers',
        { 'Retry-After': '1' },
      );
    }
    await sleep(IN_FLIGHT_POLL_MS);
  }
  let answer: Record<string, unknown>;
  try {
    answer = await run();
  } catch (error) {
    // Refused before anything was sent: a retry may try again. A store that failed may still have
    // taken it (a command that timed out, a connection dropped after sending), and an emit that
    // reached some rooms has delivered there: the key stays held until the hold ends, so a retry
    // in that time does not deliver it twice.
    if (!(error instanceof EmitIncomplete) && !(error instanceof StoreError)) {
      try {
        await deps.idempotency.release(app, key, owner);
      } catch (releasing) {
        deps.log.warn({ err: releasing, app }, 'releasing an idempotency key failed: it frees itself in 30 s');
      }
    }
    throw error;
  }
  try {
    const now = deps.now();
    await deps.idempotency.complete(app, key, owner, JSON.stringify(answer), now + LIMITS.idempotencyWindowMs, now);
  } catch (error) {
    // Delivered: the answer stands. A retry within the hold is refused as in flight, later delivers again.
    deps.log.warn({ err: error, app }, 'storing the answer of an idempotent emit failed');
  }
  return answer;
}
