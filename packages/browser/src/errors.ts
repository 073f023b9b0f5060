import type { ErrorFrame, SocketErrorCode } from '@realtime/protocol';

/**
 * Codes the SDK gives itself, when no error frame came from the service:
 * - `disconnected`: the socket was lost before the service answered (a send may or may not have been taken);
 * - `closed`: the client was closed, or the service told it to stop;
 * - `left`: the room was left;
 * - `outbox_full`: too many sends are waiting for the connection;
 * - `bad_data`: the data has no JSON form (a function, a BigInt, a cycle);
 * - `token_failed` / `identity_failed`: the token or identity function threw or rejected.
 *
 * @example
 * room.send('chat', data).catch((err: RealtimeSocketError) => err.code === 'disconnected' && retryLater());
 */
export type LocalErrorCode =
  | 'disconnected'
  | 'closed'
  | 'left'
  | 'outbox_full'
  | 'bad_data'
  | 'token_failed'
  | 'identity_failed';

/**
 * Every code a {@link RealtimeSocketError} may carry: the service's error frame codes
 * (`bad_token`, `not_allowed`, ...) or the SDK's own. The `string & {}` member keeps codes a newer
 * service may add usable without an SDK upgrade.
 */
export type RealtimeSocketErrorCode = SocketErrorCode | LocalErrorCode | (string & {});

/**
 * An error of the realtime connection: an `error` frame from the service, or a failure of the SDK.
 *
 * @example
 * try {
 *   await room.send('chat', { text: 'hi' });
 * } catch (err) {
 *   if (err instanceof RealtimeSocketError && err.code === 'not_allowed') showReadOnlyBanner();
 * }
 */
export class RealtimeSocketError extends Error {
  override readonly name = 'RealtimeSocketError';
  /** A service error code (`bad_token`, `not_allowed`, ...) or an SDK code (`disconnected`, `closed`, ...). */
  readonly code: RealtimeSocketErrorCode;
  /** The room the error is about, when there is one. */
  readonly room: string | undefined;

  constructor(code: RealtimeSocketErrorCode, message: string, options: { room?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.room = options.room;
  }

  /** The error an `error` frame describes. */
  static fromFrame(frame: ErrorFrame): RealtimeSocketError {
    const code = typeof frame.code === 'string' ? frame.code : 'bad_frame';
    const message = typeof frame.message === 'string' ? frame.message : code;
    return new RealtimeSocketError(code, message, typeof frame.room === 'string' ? { room: frame.room } : {});
  }
}
