import { RealtimeSocketError, type RealtimeSocketErrorCode } from '../errors.js';

/**
 * Codes a call's error may carry besides the service's (`bad_token`, `token_expired`, `wrong_user`,
 * `wrong_call`, `in_call`, `no_call`, `not_included`...) and the socket's (`disconnected`, `closed`):
 * - `media_failed`: `getUserMedia` failed (no device, permission denied);
 * - `token_failed`: the call token function threw or rejected;
 * - `unsupported`: no WebRTC here;
 * - `signal_too_large`: a description or candidate is over the service's 64 KB limit;
 * - `peer_failed`: the WebRTC connection could not apply a description or candidate.
 */
export type CallLocalErrorCode = 'media_failed' | 'token_failed' | 'unsupported' | 'signal_too_large' | 'peer_failed';

/**
 * Why a call ended by an error: a {@link RealtimeSocketError} that also names the call.
 *
 * @example
 * call.on('ended', ({ error }) => {
 *   if (error?.code === 'in_call') toast('You are already in a call');
 *   if (error?.code === 'media_failed') toast('Microphone blocked');
 * });
 */
export class CallError extends RealtimeSocketError {
  /** The call's id, once the service placed it. */
  readonly call: string | undefined;

  constructor(
    code: RealtimeSocketErrorCode | CallLocalErrorCode,
    message: string,
    options: { call?: string | undefined; cause?: unknown } = {},
  ) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.call = options.call;
  }

  /** The same error, naming the call. */
  static of(error: RealtimeSocketError, call: string | undefined): CallError {
    if (error instanceof CallError && error.call === call) return error;
    return new CallError(error.code, error.message, { call, cause: error.cause });
  }
}
