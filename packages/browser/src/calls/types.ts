import type { CallEndReason, WebhookMedia } from '@realtime/protocol';
import type { TokenSource } from '../room.js';
import type { CallError } from './errors.js';

/**
 * Where a {@link Call} is:
 * - `calling`: the caller's page is getting its media and token, or waits for the service to place the call;
 * - `ringing`: placed; the callee's pages ring;
 * - `connecting`: answered; the two pages are connecting their media;
 * - `connected`: media flows between them;
 * - `ended`: over (see {@link CallEnd} for why).
 */
export type CallState = 'calling' | 'ringing' | 'connecting' | 'connected' | 'ended';

/** `outgoing` on the caller's page, `incoming` on the callee's page that accepted. */
export type CallDirection = 'outgoing' | 'incoming';

/**
 * Why a call (or a ring) ended: the `call.ended` webhook's reason, or `elsewhere` on a callee's page
 * while another page of theirs accepted or rejected it.
 */
export type CallEndedReason = CallEndReason | 'elsewhere';

/**
 * How a call ended, given by {@link Call.ended} and the `ended` event.
 *
 * @example
 * const { reason, error } = await call.ended;
 * if (error) console.warn('call failed:', error.code, error.message);
 * else if (reason === 'busy') showBusy();
 */
export interface CallEnd {
  reason: CallEndedReason;
  /**
   * Set when the call ended by an error rather than by someone hanging up: a frame of it the
   * service refused (`bad_token`, `in_call`, `no_call`...), or a local failure (`media_failed`,
   * `token_failed`, `disconnected`, `closed`, `unsupported`, `signal_too_large`). `reason` is then `failed`.
   */
  error?: CallError;
}

/**
 * The local media of a call: a stream the page already has (the SDK never stops its tracks), or
 * constraints for `getUserMedia` (the SDK stops the tracks it got when the call ends).
 */
export type CallMediaSource = MediaStream | MediaStreamConstraints;

/**
 * Options of `client.call`.
 *
 * @example
 * client.call('bob', { token: () => fetch('/rt/call/bob').then((r) => r.text()), media: { audio: true, video: true } });
 */
export interface CallOptions {
  /** A call token for this page's user with `call: { to }` (`callToken` of `@realtime/node`), or a function giving one. */
  token: TokenSource;
  /** What to send; default `{ audio: true }`, got with `getUserMedia`. */
  media?: CallMediaSource | undefined;
}

/**
 * Options of {@link IncomingCall.accept}.
 *
 * @example
 * incoming.accept({ media: { audio: true, video: incoming.media.includes('video') } });
 */
export interface AcceptOptions {
  /** What to send; default audio, and video when the call is a video call, got with `getUserMedia`. */
  media?: CallMediaSource | undefined;
}

/**
 * WebRTC options of a client's calls (`connect({ rtc })`). STUN and TURN servers come from the
 * service with each call.
 *
 * @example
 * // Tests: keep ICE on loopback.
 * connect({ url, site, rtc: { candidateFilter: (c) => / 127\.0\.0\.1 /.test(c.candidate ?? '') } });
 */
export interface RtcOptions {
  /** Keeps an ICE candidate (true) or drops it; applied to the candidates sent and to those received. */
  candidateFilter?: ((candidate: RTCIceCandidateInit) => boolean) | undefined;
  /** `relay` sends media through TURN only (hides the page's addresses from the peer); default `all`. */
  iceTransportPolicy?: RTCIceTransportPolicy | undefined;
  /** Time from answer to connected media (ms) before the call ends `failed`; default 20,000. */
  connectTimeoutMs?: number | undefined;
  /**
   * Video sent to a forwarding unit (a stream's presenter, a group in unit mode) goes as three
   * layers (simulcast, default `true`), so each viewer gets the one that fits its link; `false`
   * sends one. Calls between two pages (and mesh groups) always send one.
   */
  simulcast?: boolean | undefined;
}

/** What kinds of media an incoming call is for, from the caller's call token. */
export type CallMediaKind = WebhookMedia;
