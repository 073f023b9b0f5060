/**
 * Live streams over the page socket (docs/calls.md): one presenter's camera and microphone go to a
 * forwarding unit the service runs, and every watching page receives them from there. The service
 * carries the signalling between each page and the unit, and keeps the stream's lifecycle.
 *
 * A presenter page sends `stream.present` (answered `stream.presenting`), then its WebRTC offer as
 * `stream.signal`; the unit answers with a `stream.signal`. Once the presenter's media connects, the
 * stream is live: every page on it gets `stream.live`, and the unit sends each watching page an offer
 * (`stream.signal`), which the page answers. A watching page may come before the stream is live and
 * waits. When the presenter leaves, closes or its media fails, every page gets `stream.ended` and
 * stays on the stream for the next time it goes live.
 *
 * The unit's descriptions carry all its ICE candidates; pages trickle theirs to it as
 * `stream.signal` with `{ candidate }`.
 */
import type { IceServer } from './calls.js';

// Frames a page sends.
export interface StreamPresentFrame {
  t: 'stream.present';
  ref: number;
  stream: string;
  /** A stream grant (stream grant key) with this `stream` and `role: "presenter"`. */
  grant: string;
}
export interface StreamWatchFrame {
  t: 'stream.watch';
  ref: number;
  stream: string;
  /** A stream grant with this `stream` and `role: "viewer"`; without `sub` the page is a visitor. */
  grant: string;
}
/** Leaves the stream (a presenter's leaving ends the live run). */
export interface StreamLeaveFrame {
  t: 'stream.leave';
  ref: number;
  stream: string;
}
/**
 * To the forwarding unit: the presenter's offer (`{ sdp }`), a watching page's answer (`{ sdp }`),
 * an ICE candidate (`{ candidate }`), `{ restart: true }` from a watching page whose media failed
 * (the unit sends a fresh offer), or a watching page's `{ video }` (VideoSignalData: adaptive
 * stream). At most 64 KB.
 */
export interface StreamSignalFrame {
  t: 'stream.signal';
  stream: string;
  data: Record<string, unknown>;
}

export type StreamClientFrame = StreamPresentFrame | StreamWatchFrame | StreamLeaveFrame | StreamSignalFrame;

// Frames the service sends.
/** Answers `stream.present`: send the offer now. */
export interface StreamPresentingFrame {
  t: 'stream.presenting';
  ref: number;
  stream: string;
  ice: IceServer[];
}
/** Answers `stream.watch`: when `live`, the unit's offer follows; otherwise `stream.live` comes first. */
export interface StreamWatchingFrame {
  t: 'stream.watching';
  ref: number;
  stream: string;
  live: boolean;
  /** When the live run began, when `live`. */
  started_at?: number;
  ice: IceServer[];
}
/** Answers `stream.leave`. */
export interface StreamLeftFrame {
  t: 'stream.left';
  ref: number;
  stream: string;
}
/** The stream went live (to every page on it); watching pages get the unit's offer next. */
export interface StreamLiveFrame {
  t: 'stream.live';
  stream: string;
  started_at: number;
}
/** The live run ended (the presenter left, closed, or its media failed); pages stay on the stream. */
export interface StreamEndedFrame {
  t: 'stream.ended';
  stream: string;
}
/** From the forwarding unit: its answer to the presenter, or its offer to a watching page (`{ sdp }`). */
export interface StreamSignalInFrame {
  t: 'stream.signal';
  stream: string;
  data: Record<string, unknown>;
}

export type StreamServerFrame =
  | StreamPresentingFrame
  | StreamWatchingFrame
  | StreamLeftFrame
  | StreamLiveFrame
  | StreamEndedFrame
  | StreamSignalInFrame;

/** Pages on one stream at most (presenter and watchers), unless the service is configured otherwise. */
export const STREAM_MAX_PAGES = 200;
