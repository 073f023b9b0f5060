import { toHex } from './encoding.js';
import { hmacSha256, sha256Bytes } from './keys.js';
import { LIMITS } from './limits.js';

/**
 * Header names of section 5.1 (and the extra batch header of decisions.md). `otherSignature` is on
 * webhooks only while the app holds two secrets: the same message signed under the other one
 * (docs/webhooks.md, "Secret rotation").
 */
export const HEADERS = {
  site: 'X-Service-Site',
  timestamp: 'X-Service-Timestamp',
  signature: 'X-Service-Signature',
  otherSignature: 'X-Service-Signature-Other',
  batch: 'X-Service-Batch',
} as const;

/** sha256 hex of the empty body, used for requests without a body. */
export const EMPTY_BODY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export function sha256Hex(body: string | Uint8Array): string {
  if (body.length === 0) return EMPTY_BODY_SHA256;
  return toHex(sha256Bytes(body));
}

/** The message of section 5.2: four lines joined by a line feed, no trailing line feed. */
export function signingMessage(
  timestamp: string,
  method: string,
  pathWithQuery: string,
  bodySha256Hex: string,
): string {
  return `${timestamp}\n${method.toUpperCase()}\n${pathWithQuery}\n${bodySha256Hex}`;
}

export interface SignInput {
  /** The derived key (publish key for API requests, webhook key for webhooks). */
  key: Uint8Array;
  /** Unix seconds as sent in X-Service-Timestamp. */
  timestamp: string;
  method: string;
  /** Path with its query, exactly as sent, percent-encoding included. */
  path: string;
  /** The body exactly as sent; empty string when there is none. */
  body: string | Uint8Array;
}

/** Lowercase hex HMAC-SHA256 of the signing message. */
export function sign(input: SignInput): string {
  const message = signingMessage(input.timestamp, input.method, input.path, sha256Hex(input.body));
  return toHex(hmacSha256(input.key, message));
}

/** Constant-time comparison of two strings (length leaks, content does not). */
export function timingSafeEqualString(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** X-Service-Timestamp: 1 to 12 ASCII digits. */
export const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;

export function isFreshTimestamp(timestamp: string, nowMs: number): boolean {
  return Math.abs(Number(timestamp) - Math.floor(nowMs / 1000)) <= LIMITS.clockSkewSeconds;
}

export type SignatureProblem = 'missing_signature' | 'stale_signature' | 'bad_signature';

export interface VerifyWebhookInput {
  /** The app key the receiver expects in X-Service-Site. */
  site: string;
  webhookKey: Uint8Array;
  headers: { site?: string | undefined; timestamp?: string | undefined; signature?: string | undefined };
  path: string;
  body: string | Uint8Array;
  nowMs: number;
}

/** The checks of section 5.5, in order. Returns null when the webhook is genuine. */
export function checkWebhookSignature(input: VerifyWebhookInput): SignatureProblem | null {
  const { site, timestamp, signature } = input.headers;
  if (site !== input.site || timestamp === undefined || !TIMESTAMP_PATTERN.test(timestamp) || !signature) {
    return 'missing_signature';
  }
  if (!isFreshTimestamp(timestamp, input.nowMs)) return 'stale_signature';
  const expected = sign({ key: input.webhookKey, timestamp, method: 'POST', path: input.path, body: input.body });
  return timingSafeEqualString(expected, signature) ? null : 'bad_signature';
}
