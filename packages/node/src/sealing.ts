import { openJsonWithKey, sealingKey, sealJsonWithKey } from '@realtime/protocol';

/**
 * Seals a JSON value under a label with the app's local key (section 5.4).
 * The value is serialized with JSON.stringify, so pages opening it get the same JSON back.
 *
 * @example
 * sealJson(localKey, 'room:lobby', { text: 'hi' }) // 'room:lobby:1.…'
 */
export function sealJson(localKey: Uint8Array, label: string, value: unknown): string {
  checkLabel(label);
  return sealJsonWithKey(sealingKey(localKey, label), label, value);
}

/**
 * Opens a sealed value to its JSON value; null when it is not a sealed value of this app, was changed,
 * is not JSON inside, or (with `label`) was sealed under another label. Never throws on bad input.
 * A sealed JSON `null` also opens to null.
 *
 * @example
 * openJson(localKey, sealed) // { text: 'hi' }
 */
export function openJson(localKey: Uint8Array, sealed: unknown, label?: string): unknown {
  // The local key derives the key of whatever label the value carries.
  return openJsonWithKey((found) => sealingKey(localKey, found), sealed, label);
}

/**
 * The key of one label, to hand to the pages that must seal or open under it.
 *
 * @example
 * keyForLabel(localKey, 'user:alice') // 32 bytes
 */
export function keyForLabel(localKey: Uint8Array, label: string): Uint8Array {
  checkLabel(label);
  return sealingKey(localKey, label);
}

function checkLabel(label: string): void {
  if (typeof label !== 'string' || label.length === 0) throw new TypeError('a sealing label is a non-empty string');
}
