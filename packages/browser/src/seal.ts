import { decodeKey32, openJsonWithKey, SEAL_KEY_BYTES, sealJsonWithKey } from '@realtime/protocol';

/**
 * Length of a sealing key: 32 bytes.
 *
 * @example
 * parseSealKey(bytes).length === SEAL_KEY_BYTES; // true
 */
export { SEAL_KEY_BYTES };

/**
 * Reads a sealing key handed to the page by the customer's server (`keyForLabel` of `@realtime/node`),
 * given as 64 hex characters or 43 base64url characters, or as its 32 bytes.
 * Throws a TypeError for anything else; the message never repeats the key.
 *
 * @example
 * const key = parseSealKey(await (await fetch('/my/room-key')).text());
 */
export function parseSealKey(input: string | Uint8Array): Uint8Array {
  if (input instanceof Uint8Array) {
    if (input.length !== SEAL_KEY_BYTES) throw new TypeError(`a sealing key is ${SEAL_KEY_BYTES} bytes`);
    return Uint8Array.from(input);
  }
  if (typeof input !== 'string') throw new TypeError('a sealing key is a string or a Uint8Array');
  const bytes = decodeKey32(input);
  if (bytes === null) {
    throw new TypeError(
      `a sealing key is ${SEAL_KEY_BYTES} bytes as 64 hex or 43 base64url characters (got ${input.length} characters)`,
    );
  }
  return bytes;
}

/**
 * Seals a JSON value under a label with that label's key, so the service carries it without reading it.
 * Throws a TypeError when the value has no JSON form or the label is empty.
 *
 * @example
 * await room.send('chat', sealWith(roomKey, 'room:lobby', { text: 'hi' }));
 */
export function sealWith(key: Uint8Array, label: string, value: unknown): string {
  return sealJsonWithKey(key, label, value);
}

/**
 * Opens a sealed value to its JSON value. Null when the value is not sealed, was changed, was sealed
 * with another key, is not JSON inside, or (when `label` is given) carries another label. Never throws.
 * A sealed JSON `null` also opens to null.
 *
 * @example
 * room.on('chat', (data) => {
 *   const message = openWith(roomKey, data, 'room:lobby');
 *   if (message !== null) show(message);
 * });
 */
export function openWith(key: Uint8Array, value: unknown, label?: string): unknown {
  if (!(key instanceof Uint8Array)) return null;
  return openJsonWithKey(key, value, label);
}
