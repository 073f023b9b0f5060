import type {
  StreamClientFrame,
  StreamLiveFrame,
  StreamPresentingFrame,
  StreamWatchingFrame,
} from '@realtime/protocol';
import type { RtcOptions } from '../calls/types.js';
import type { RealtimeSocketError } from '../errors.js';

/** What the streams module routes to one page's stream: the service's frames about it and the socket's fate. */
export interface StreamParty {
  /** `stream.presenting` or `stream.watching`: the page is on the stream. */
  entered(frame: StreamPresentingFrame | StreamWatchingFrame): void;
  /** `stream.left`: the service took the page off. */
  leftAnswer(): void;
  live(frame: StreamLiveFrame): void;
  ended(): void;
  signal(data: Record<string, unknown>): void;
  /** An error frame with the party's ref (or stream). */
  refused(error: RealtimeSocketError): void;
  /** A new socket is welcomed: join again. */
  welcome(): void;
  /** The socket was lost (`final`: the client is closed for good). */
  lost(error: RealtimeSocketError, final: boolean): void;
  /** The page goes away or the client closes. */
  leave(): void;
}

/** What a stream needs from the client's streams module. */
export interface StreamLink {
  readonly rtc: RtcOptions;
  readonly ready: boolean;
  /** The number of the current socket: a stream's frames belong to the socket they were sent on. */
  readonly session: number;
  /** Resolves at the next welcome (at once when ready); rejects when the client closes. */
  whenReady(): Promise<void>;
  send(frame: StreamClientFrame): boolean;
  nextRef(): number;
  /** Routes frames with this ref to the party. */
  claim(ref: number, party: StreamParty): void;
  release(ref: number, party: StreamParty): void;
  /** The party is on the stream of its name (hears its frames and the socket's fate) or no longer. */
  live(name: string, party: StreamParty, on: boolean): void;
}
