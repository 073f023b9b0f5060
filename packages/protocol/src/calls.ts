/**
 * Calls between two people over the page socket (docs/calls.md): the service carries the
 * signalling and keeps the call's lifecycle; media flows browser to browser.
 *
 * A call: the caller's page sends `call.invite` (answered `call.placed` with the call id); every
 * open page of the callee gets `call.ring`; one of them sends `call.accept` (answered
 * `call.accepted`); the caller's page gets `call.answered` and makes the WebRTC offer; offer, answer
 * and trickled ICE candidates go both ways as `call.signal`; either side ends it with `call.hangup`.
 * Every page the call reached gets `call.ended` once, with why.
 */
import type { CallEndReason, WebhookMedia } from './webhook-events.js';

/** One STUN or TURN server, as `RTCIceServer` takes it. TURN ones carry time-limited credentials. */
export interface IceServer {
  urls: string[];
  username?: string;
  credential?: string;
}

// Frames a page sends.
export interface CallInviteFrame {
  t: 'call.invite';
  ref: number;
  /** The user called: must be the call token's `call.to`. */
  to: string;
  /** A call token (calls key) for this page's user with `call: { to }`. */
  token: string;
}
export interface CallAcceptFrame {
  t: 'call.accept';
  ref: number;
  call: string;
}
export interface CallRejectFrame {
  t: 'call.reject';
  call: string;
}
export interface CallHangupFrame {
  t: 'call.hangup';
  call: string;
  /** The media could not connect (ICE failed, or never connected in time): the call ends `failed`. */
  failed?: boolean;
}
/** A WebRTC description or ICE candidate for the other side's page: carried as is, at most 64 KB. */
export interface CallSignalFrame {
  t: 'call.signal';
  call: string;
  data: Record<string, unknown>;
}

export type CallClientFrame = CallInviteFrame | CallAcceptFrame | CallRejectFrame | CallHangupFrame | CallSignalFrame;

// Frames the service sends.
/** Answers `call.invite`: the call rings (or ends at once with `call.ended` when the callee is busy). */
export interface CallPlacedFrame {
  t: 'call.placed';
  ref: number;
  call: string;
  ice: IceServer[];
}
/** An incoming call, on every open page of the callee (and on a page of theirs that opens while it rings). */
export interface CallRingFrame {
  t: 'call.ring';
  call: string;
  from: string;
  media: WebhookMedia[];
  ice: IceServer[];
}
/** Answers `call.accept`: this page has the call; the caller's offer follows as `call.signal`. */
export interface CallAcceptedFrame {
  t: 'call.accepted';
  ref: number;
  call: string;
}
/** To the caller's page: the callee accepted; make the offer. */
export interface CallAnsweredFrame {
  t: 'call.answered';
  call: string;
}
/**
 * The call ended, to each page it reached: the webhook's reason, or `elsewhere` for a page of the
 * callee while another of their pages accepted or rejected it.
 */
export interface CallEndedFrame {
  t: 'call.ended';
  call: string;
  reason: CallEndReason | 'elsewhere';
}

export type CallServerFrame =
  | CallPlacedFrame
  | CallRingFrame
  | CallAcceptedFrame
  | CallAnsweredFrame
  | CallSignalFrame
  | CallEndedFrame;

/** Largest `data` of a `call.signal`, as JSON text: an SDP with many codecs fits well. */
export const SIGNAL_MAX_BYTES = 65_536;

/** How long a call rings before it ends `missed`, unless the service is configured otherwise. */
export const RING_MS = 60_000;
