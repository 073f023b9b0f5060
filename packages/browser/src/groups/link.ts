import type {
  GroupClientFrame,
  GroupJoinedFrame,
  GroupModeFrame,
  GroupPeerJoinedFrame,
  GroupPeerLeftFrame,
  GroupSignalInFrame,
} from '@realtime/protocol';
import type { RtcOptions } from '../calls/types.js';
import type { RealtimeSocketError } from '../errors.js';

/** What the groups module routes to one group call: the service's frames about it and the fate of the socket. */
export interface GroupParty {
  joined(frame: GroupJoinedFrame): void;
  /** The answer to its `group.leave`. */
  left(): void;
  peerJoined(frame: GroupPeerJoinedFrame): void;
  peerLeft(frame: GroupPeerLeftFrame): void;
  /** The group switched mode (to `unit`). */
  mode(frame: GroupModeFrame): void;
  signal(frame: GroupSignalInFrame): void;
  /** An error frame with the ref of its join or leave. */
  refused(error: RealtimeSocketError, ref: number): void;
  /**
   * An error frame without ref naming this group (a refused signal, or `from` a page whose unit
   * refused this page a session): true when the group takes it.
   */
  signalRefused(error: RealtimeSocketError, from: string | undefined): boolean;
  /** The socket was lost (`final`: the client is closed for good). */
  lost(error: RealtimeSocketError, final: boolean): void;
  /** The page goes away or the client closes: leave. */
  leave(): void;
}

/** What a group call needs from the client's groups module. */
export interface GroupLink {
  readonly rtc: RtcOptions;
  /** The page's user, from the last welcome (null: anonymous). */
  readonly user: string | null | undefined;
  /** The number of the current socket: a group's frames belong to the socket it joined on. */
  readonly session: number;
  /** Resolves at the next welcome (at once when ready); rejects when the client closes. */
  whenReady(): Promise<void>;
  /** Writes a frame on the current socket; false when none is ready (nothing written). */
  send(frame: GroupClientFrame): boolean;
  /** A ref no room request nor call uses. */
  nextRef(): number;
  /** Routes frames with this ref or group name to the party (replacing whoever had it). */
  claim(key: number | string, party: GroupParty): void;
  /** Stops routing the key to the party (if it still has it). */
  release(key: number | string, party: GroupParty): void;
  /** The party is live (hears socket losses and page exits) or no longer. */
  live(party: GroupParty, on: boolean): void;
}
