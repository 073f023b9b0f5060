import { fromBase64Url, fromHex } from '@realtime/protocol';

/** Length of the app's local key: 32 random bytes (`keygen` in the CLI makes one). */
export const LOCAL_KEY_BYTES = 32;

/**
 * The forms a local key may be given in: its 32 raw bytes, 64 hex characters, or 43 base64url characters.
 */
export type LocalKeyInput = Uint8Array | string;

/**
 * Reads a local key in any accepted form and returns a private copy of its 32 bytes.
 * Throws a TypeError naming the problem, so a misconfigured key fails at start-up, not on first use.
 *
 * @example
 * parseLocalKey('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f').length // 32
 */
export function parseLocalKey(input: LocalKeyInput): Uint8Array {
  if (input instanceof Uint8Array) {
    if (input.length !== LOCAL_KEY_BYTES) {
      throw new TypeError(`\`localKey\` must be ${LOCAL_KEY_BYTES} bytes, got ${input.length}`);
    }
    // A copy, so that the caller reusing or wiping its buffer cannot change the client's key.
    return Uint8Array.from(input);
  }
  if (typeof input !== 'string') {
    throw new TypeError(`\`localKey\` must be a Uint8Array or a string, got ${input === null ? 'null' : typeof input}`);
  }
  const text = input.trim();
  const bytes = text.length === LOCAL_KEY_BYTES * 2 ? fromHex(text) : fromBase64Url(text);
  if (bytes === null || bytes.length !== LOCAL_KEY_BYTES) {
    // Never echo the value: it is a secret.
    throw new TypeError(
      `\`localKey\` must be ${LOCAL_KEY_BYTES} bytes given as 64 hex characters or 43 base64url characters ` +
        `(a string of ${input.length} characters was given)`,
    );
  }
  return bytes;
}
