import { fromBase64Url, fromHex } from './encoding.js';
import { openWithKey, sealWithKey, splitSealed } from './seal.js';

/** Length of a sealing key (and of an app's local key): 32 bytes. */
export const SEAL_KEY_BYTES = 32;

/**
 * A 32-byte key written as 64 hex characters or 43 base64url characters (surrounding white space
 * ignored); null for anything else. Callers word their own error, never repeating the key.
 */
export function decodeKey32(text: string): Uint8Array | null {
  const trimmed = text.trim();
  const bytes = trimmed.length === SEAL_KEY_BYTES * 2 ? fromHex(trimmed) : fromBase64Url(trimmed);
  return bytes !== null && bytes.length === SEAL_KEY_BYTES ? bytes : null;
}

/**
 * Seals a JSON value under a label with that label's key (section 5.4). The value is serialized
 * with JSON.stringify, so whoever opens it gets the same JSON back. Throws a TypeError when the
 * label is empty or the value has no JSON form.
 *
 * @example sealJsonWithKey(sealingKey(localKey, 'room:lobby'), 'room:lobby', { text: 'hi' })
 */
export function sealJsonWithKey(key: Uint8Array, label: string, value: unknown): string {
  if (typeof label !== 'string' || label.length === 0) throw new TypeError('a sealing label is a non-empty string');
  const text = JSON.stringify(value);
  // JSON.stringify gives undefined (not a string) for undefined, functions and symbols.
  if (typeof text !== 'string') throw new TypeError(`cannot seal ${typeof value}: it has no JSON form`);
  return sealWithKey(key, label, text);
}

/**
 * Opens a sealed value to its JSON value. Null when the value is not sealed, was changed, was sealed
 * with another key, is not JSON inside, or (when `label` is given) carries another label. Never
 * throws. A sealed JSON `null` also opens to null.
 *
 * `key` is the label's key, or a function giving the key of the value's own label (for a holder of
 * the local key, which can derive any label's key).
 */
export function openJsonWithKey(
  key: Uint8Array | ((label: string) => Uint8Array),
  value: unknown,
  label?: string,
): unknown {
  if (typeof value !== 'string') return null;
  const found = splitSealed(value)?.label;
  if (found === undefined || (label !== undefined && found !== label)) return null;
  let text: string | null;
  try {
    const labelKey = typeof key === 'function' ? key(found) : key;
    if (!(labelKey instanceof Uint8Array)) return null;
    text = openWithKey(labelKey, value);
  } catch {
    return null;
  }
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
