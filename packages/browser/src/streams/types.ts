import type { CallMediaSource } from '../calls/types.js';
import type { TokenSource } from '../room.js';
import type { StreamError } from './errors.js';

/** What a page does on a stream: sends its camera and microphone (`presenter`) or receives them (`viewer`). */
export type StreamRole = 'presenter' | 'viewer';

/**
 * Where a page is on a {@link LiveStream}:
 * - `joining`: getting the grant (and a presenter's media), waiting for the connection, or for the
 *   service to take it on the stream (again after a reconnect);
 * - `waiting`: a viewer on a stream that is not live: the media comes when it goes live;
 * - `connecting`: the page's media connection to the forwarding unit is being set up;
 * - `live`: media flows (a presenter's: the service said the stream is live);
 * - `left`: off the stream for good ({@link LiveStream.left} says why).
 */
export type StreamState = 'joining' | 'waiting' | 'connecting' | 'live' | 'left';

/** A live run began: `startedAt` (ms) from `stream.live`; unknown to a viewer that came while it was live already. */
export interface StreamLiveInfo {
  startedAt: number | undefined;
}

/**
 * How a page left a stream, given by {@link LiveStream.left} and the `left` event: by
 * {@link LiveStream.leave} (no error), or by an error (the service refused the grant, the media
 * failed, the client closed).
 */
export interface StreamLeave {
  error?: StreamError;
}

/**
 * Options of `client.stream`.
 *
 * @example
 * client.stream('keynote', { grant: () => fetch('/rt/stream-grant/keynote').then((r) => r.text()) });
 * client.stream('keynote', { grant, media: { audio: true, video: { width: 1280, height: 720 } } });
 */
export interface StreamOptions {
  /**
   * A stream grant for this stream (`streamGrant` of `@realtime/node`), or a function giving one
   * (called again for each reconnect, so an expired grant is refreshed).
   */
  grant: TokenSource;
  /**
   * Present or watch. Default: the grant's own `role` claim (read, not verified: the service checks
   * it); a grant of the other role is refused `wrong_stream`.
   */
  role?: StreamRole | undefined;
  /** A presenter's media: default `{ audio: true, video: true }`, got with `getUserMedia`. Viewers send nothing. */
  media?: CallMediaSource | undefined;
}
