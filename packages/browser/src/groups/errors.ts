import type { CallLocalErrorCode } from '../calls/errors.js';
import { RealtimeSocketError, type RealtimeSocketErrorCode } from '../errors.js';

/**
 * Why a page's group call, or its media with one peer, ended by an error: the service's code when it
 * refused the join (`bad_token`, `token_expired`, `wrong_user`, `wrong_call`, `group_full`,
 * `not_included`, `unavailable`...), or the SDK's (`media_failed`, `token_failed`, `peer_failed`,
 * `signal_too_large`, `disconnected`, `closed`).
 *
 * @example
 * group.on('ended', ({ error }) => {
 *   if (error?.code === 'group_full') toast('The call is full');
 *   if (error?.code === 'media_failed') toast('Microphone blocked');
 * });
 */
export class GroupError extends RealtimeSocketError {
  /** The group call's name. */
  readonly group: string;

  constructor(
    code: RealtimeSocketErrorCode | CallLocalErrorCode,
    message: string,
    options: { group: string; cause?: unknown },
  ) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.group = options.group;
  }

  /** The error as a GroupError of `group`: a socket error keeps its code; anything else gets `code`. */
  static of(error: unknown, group: string, code: CallLocalErrorCode | 'closed' = 'peer_failed'): GroupError {
    if (error instanceof GroupError && error.group === group) return error;
    if (error instanceof RealtimeSocketError) {
      return new GroupError(error.code, error.message, { group, cause: error.cause ?? error });
    }
    return new GroupError(code, error instanceof Error ? error.message : String(error), { group, cause: error });
  }
}
