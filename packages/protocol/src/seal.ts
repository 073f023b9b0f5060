import { xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { randomBytes } from '@noble/ciphers/utils.js';
import { fromBase64Url, fromUtf8, toBase64Url, utf8 } from './encoding.js';
import { hmacSha256 } from './keys.js';

/** Marker between the label and the payload of a sealed value (section 5.4, version 1). */
export const SEAL_MARKER = ':1.';
const NONCE_BYTES = 24;
const TAG_BYTES = 16;

/** Key for a label = HMAC-SHA256(localKey, `service-realtime key v1|<label>`). */
export function sealingKey(localKey: Uint8Array, label: string): Uint8Array {
  return hmacSha256(localKey, `service-realtime key v1|${label}`);
}

/**
 * Seals text under a label's key. The nonce is random unless given (test vectors only).
 * @example sealWithKey(sealingKey(localKey, 'room:lobby'), 'room:lobby', '{"text":"hi"}')
 */
export function sealWithKey(key: Uint8Array, label: string, plaintext: string, nonce?: Uint8Array): string {
  if (label.length === 0) throw new TypeError('a sealing label must not be empty');
  const n = nonce ?? randomBytes(NONCE_BYTES);
  if (n.length !== NONCE_BYTES) throw new TypeError('a sealing nonce is 24 bytes');
  const sealed = xchacha20poly1305(key, n, utf8(label)).encrypt(utf8(plaintext));
  const joined = new Uint8Array(NONCE_BYTES + sealed.length);
  joined.set(n, 0);
  joined.set(sealed, NONCE_BYTES);
  return `${label}${SEAL_MARKER}${toBase64Url(joined)}`;
}

/** Splits a sealed value at the last `:1.`; null when it does not have the sealed shape. */
export function splitSealed(value: string): { label: string; payload: string } | null {
  const at = value.lastIndexOf(SEAL_MARKER);
  if (at <= 0) return null;
  const payload = value.slice(at + SEAL_MARKER.length);
  if (payload.length < Math.ceil(((NONCE_BYTES + TAG_BYTES) * 4) / 3)) return null;
  return { label: value.slice(0, at), payload };
}

/** True when a value has the sealed shape `<label>:1.<base64url>` (says nothing of who sealed it). */
export function isSealed(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const parts = splitSealed(value);
  return parts !== null && /^[A-Za-z0-9_-]+$/.test(parts.payload);
}

/** Opens a value with the key of its label; null for any value this key did not seal. Never throws. */
export function openWithKey(key: Uint8Array, value: string): string | null {
  if (typeof value !== 'string') return null;
  const parts = splitSealed(value);
  if (!parts) return null;
  const bytes = fromBase64Url(parts.payload);
  if (!bytes || bytes.length < NONCE_BYTES + TAG_BYTES) return null;
  try {
    const plain = xchacha20poly1305(key, bytes.subarray(0, NONCE_BYTES), utf8(parts.label)).decrypt(
      bytes.subarray(NONCE_BYTES),
    );
    return fromUtf8(plain);
  } catch {
    return null;
  }
}

/** Seals with the app's local key, deriving the label's key. */
export function seal(localKey: Uint8Array, label: string, plaintext: string, nonce?: Uint8Array): string {
  return sealWithKey(sealingKey(localKey, label), label, plaintext, nonce);
}

/** Opens with the app's local key, deriving the key of the value's own label. Never throws. */
export function open(localKey: Uint8Array, value: string): string | null {
  if (typeof value !== 'string') return null;
  const parts = splitSealed(value);
  if (!parts) return null;
  return openWithKey(sealingKey(localKey, parts.label), value);
}
