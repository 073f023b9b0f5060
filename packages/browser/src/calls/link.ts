import type { CallClientFrame, CallPlacedFrame } from '@realtime/protocol';
import type { RealtimeSocketError } from '../errors.js';
import type { CallEndedReason, RtcOptions } from './types.js';

/**
 * What the calls module routes to one call or ring: the service's frames about it and the fate of
 * the socket. A party is reached by the `ref` of its pending frame or by its call id.
 */
export interface CallParty {
  placed(frame: CallPlacedFrame): void;
  accepted(): void;
  answered(): void;
  signal(data: Record<string, unknown>): void;
  ended(reason: CallEndedReason): void;
  /** An error frame with the party's ref or call id. */
  refused(error: RealtimeSocketError): void;
  /** The socket was lost (`final`: the client is closed for good). */
  lost(error: RealtimeSocketError, final: boolean): void;
  /** The page goes away or the client closes: hang up what can be hung up. */
  leave(): void;
}

/** What calls and rings need from the client's calls module. */
export interface CallLink {
  readonly rtc: RtcOptions;
  /** Welcomed: frames written now are taken. */
  readonly ready: boolean;
  /** The number of the current socket; call frames belong to the socket they were sent on. */
  readonly session: number;
  /** Resolves at the next welcome (at once when ready); rejects when the client closes. */
  whenReady(): Promise<void>;
  /** Writes a frame on the current socket; false when none is ready (nothing written). */
  send(frame: CallClientFrame): boolean;
  /** A ref no room request uses. */
  nextRef(): number;
  /** Routes frames with this ref or call id to the party (replacing whoever had it). */
  claim(key: number | string, party: CallParty): void;
  /** Stops routing the key to the party (if it still has it). */
  release(key: number | string, party: CallParty): void;
  /** The party is live (hears socket losses and page exits) or no longer. */
  live(party: CallParty, on: boolean): void;
}
