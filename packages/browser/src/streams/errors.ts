import type { CallLocalErrorCode } from '../calls/errors.js';
import { RealtimeSocketError, type RealtimeSocketErrorCode } from '../errors.js';

/**
 * Why a page left a stream by an error: a {@link RealtimeSocketError} that also names the stream.
 * Codes: the service's (`stream_taken`, `stream_full`, `wrong_stream`, `not_in_stream`,
 * `bad_token`, `token_expired`, `not_included`, `unavailable`: no free media port, or a bound of
 * the forwarding units), the socket's (`closed`) or the SDK's (`media_failed`, `token_failed`,
 * `unsupported`, `signal_too_large`, `peer_failed`).
 *
 * @example
 * stream.on('left', ({ error }) => {
 *   if (error?.code === 'stream_taken') toast('Someone else is presenting');
 *   if (error?.code === 'media_failed') toast('Camera blocked');
 * });
 */
export class StreamError extends RealtimeSocketError {
  /** The stream's name. */
  readonly stream: string;

  constructor(
    code: RealtimeSocketErrorCode | CallLocalErrorCode,
    message: string,
    options: { stream: string; cause?: unknown },
  ) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.stream = options.stream;
  }

  /** The same error (a socket's, a media or peer failure), naming the stream. */
  static of(error: unknown, stream: string, fallback: CallLocalErrorCode | 'closed'): StreamError {
    if (error instanceof StreamError && error.stream === stream) return error;
    if (error instanceof RealtimeSocketError) {
      return new StreamError(error.code, error.message, { stream, cause: error.cause ?? error });
    }
    const message = error instanceof Error ? error.message : String(error);
    return new StreamError(fallback, message, { stream, cause: error });
  }
}
