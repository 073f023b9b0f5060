import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8 } from './encoding.js';

/** Labels of section 5.3: every key is HMAC-SHA256(secret, label), so the secret itself signs nothing. */
export const KEY_LABELS = {
  publish: 'service-realtime publish v1',
  webhook: 'service-realtime webhook v1',
  channels: 'service-realtime channels v1',
  calls: 'service-realtime calls v1',
  streamGrant: 'service-stream grant v1',
} as const;

export type KeyName = keyof typeof KEY_LABELS;

/**
 * Derives one of the app's keys from its secret.
 * @example deriveKey('s3cret', 'publish') // 32 raw bytes
 */
export function deriveKey(secret: string, name: KeyName): Uint8Array {
  return hmac(sha256, utf8(secret), utf8(KEY_LABELS[name]));
}

export function hmacSha256(key: Uint8Array, message: string | Uint8Array): Uint8Array {
  return hmac(sha256, key, typeof message === 'string' ? utf8(message) : message);
}

export function sha256Bytes(data: string | Uint8Array): Uint8Array {
  return sha256(typeof data === 'string' ? utf8(data) : data);
}
