import { readFileSync } from 'node:fs';
import { openWithKey, toBase64Url } from '@realtime/protocol';
import { describe, expect, it } from 'vitest';
import { isSealed, openWith, parseSealKey, sealWith } from './index.js';

interface SealVector {
  label: string;
  key: string;
  plaintext: string;
  sealed: string;
}
const vectors = JSON.parse(readFileSync(new URL('../../protocol/vectors/v1.json', import.meta.url), 'utf8')) as {
  seal: SealVector[];
  open_null: { why: string; value: string }[];
};

describe('sealing with a label key', () => {
  for (const v of vectors.seal) {
    it(`opens the protocol vector sealed under ${v.label}`, () => {
      const key = parseSealKey(v.key);
      if (v.plaintext === '') {
        // Not JSON inside: openWith gives null, though the protocol opens it to ''.
        expect(openWithKey(key, v.sealed)).toBe('');
        expect(openWith(key, v.sealed)).toBeNull();
        return;
      }
      expect(openWith(key, v.sealed)).toEqual(JSON.parse(v.plaintext));
      expect(openWith(key, v.sealed, v.label)).toEqual(JSON.parse(v.plaintext));
      expect(openWith(key, v.sealed, `${v.label}x`)).toBeNull();
      // The same key given as base64url.
      expect(openWith(parseSealKey(toBase64Url(key)), v.sealed)).toEqual(JSON.parse(v.plaintext));
    });
  }

  it('round-trips JSON values under a label, with a fresh nonce each time', () => {
    const key = parseSealKey(vectors.seal[0]?.key ?? '');
    for (const value of [{ text: 'hi', n: [1, 2] }, 'é ✓', 0, false, null, []]) {
      const sealed = sealWith(key, 'room:lobby', value);
      expect(isSealed(sealed)).toBe(true);
      expect(sealed.startsWith('room:lobby:1.')).toBe(true);
      expect(openWith(key, sealed, 'room:lobby')).toEqual(value);
    }
    expect(sealWith(key, 'room:lobby', 1)).not.toBe(sealWith(key, 'room:lobby', 1));
  });

  it('opens to null, never throwing, what this key did not seal', () => {
    const key = parseSealKey(vectors.seal[0]?.key ?? '');
    const other = parseSealKey('01'.repeat(32));
    expect(openWith(other, vectors.seal[0]?.sealed)).toBeNull();
    for (const v of vectors.open_null) expect(openWith(key, v.value)).toBeNull();
    for (const bad of [undefined, null, 42, {}, [], 'plain text']) expect(openWith(key, bad)).toBeNull();
    expect(openWith(new Uint8Array(3), vectors.seal[0]?.sealed)).toBeNull();
  });

  it('refuses keys of the wrong size or form and values without JSON form', () => {
    expect(() => parseSealKey('abcd')).toThrow(TypeError);
    expect(() => parseSealKey('zz'.repeat(32))).toThrow(TypeError);
    expect(() => parseSealKey(new Uint8Array(31))).toThrow(TypeError);
    expect(parseSealKey(new Uint8Array(32))).toHaveLength(32);
    const key = parseSealKey('00'.repeat(32));
    expect(() => sealWith(key, 'room:x', () => 1)).toThrow(TypeError);
    expect(() => sealWith(key, 'room:x', undefined)).toThrow(TypeError);
    expect(() => sealWith(key, '', 1)).toThrow(TypeError);
  });
});
