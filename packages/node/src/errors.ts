import type { ErrorCode } from '@realtime/protocol';

/**
 * Codes the SDK itself gives when no usable answer came back:
 * `network` (no answer at all: refused, reset, timed out, client closed) and
 * `bad_answer` (something answered, but not with the API's JSON).
 */
export type TransportErrorCode = 'network' | 'bad_answer';

/**
 * Every code a {@link RealtimeError} may carry. The `string & {}` member keeps codes a newer
 * service may add usable without an SDK upgrade, while editors still suggest the known ones.
 */
export type RealtimeErrorCode = ErrorCode | TransportErrorCode | (string & {});

/** Extra details of a {@link RealtimeError}. */
export interface RealtimeErrorDetails {
  /** Seconds to wait before trying again, from the `Retry-After` header (sent with 429 `rate_limited`). */
  retryAfter?: number | undefined;
  /** The underlying error, for `network` failures. */
  cause?: unknown;
}

/**
 * A failed API call: either the service answered `{ ok: false, error }`, or no usable answer came.
 *
 * @example
 * try {
 *   await realtime.emit({ rooms: ['lobby'], event: 'hello', data: {} });
 * } catch (err) {
 *   if (err instanceof RealtimeError && err.code === 'rate_limited') {
 *     await sleep((err.retryAfter ?? 1) * 1000);
 *   }
 * }
 */
export class RealtimeError extends Error {
  override readonly name = 'RealtimeError';
  /** An error code of the catalogue (`bad_room`, `too_many`, ...), or `network` / `bad_answer`. */
  readonly code: RealtimeErrorCode;
  /** HTTP status of the answer; 0 when nothing answered. */
  readonly status: number;
  /** Seconds to wait before retrying, when the service said so (`Retry-After`). */
  readonly retryAfter?: number;

  constructor(code: RealtimeErrorCode, status: number, message: string, details: RealtimeErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.status = status;
    if (details.retryAfter !== undefined) this.retryAfter = details.retryAfter;
  }
}
