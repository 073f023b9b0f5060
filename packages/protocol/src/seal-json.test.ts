import { describe, expect, it } from 'vitest';
import { decodeKey32, openJsonWithKey, sealingKey, sealJsonWithKey, toBase64Url, toHex } from './index.js';

const localKey = new Uint8Array(32).map((_, i) => i);

describe('sealed JSON', () => {
  it('opens what it sealed, with the label key or a function deriving it', () => {
    const key = sealingKey(localKey, 'room:lobby');
    const sealed = sealJsonWithKey(key, 'room:lobby', { text: 'hi', n: [1, 2] });
    expect(sealed.startsWith('room:lobby:1.')).toBe(true);
    expect(openJsonWithKey(key, sealed)).toEqual({ text: 'hi', n: [1, 2] });
    expect(openJsonWithKey((label) => sealingKey(localKey, label), sealed, 'room:lobby')).toEqual({
      text: 'hi',
      n: [1, 2],
    });
  });

  it('gives null for another label, another key, a changed value or no sealed value', () => {
    const key = sealingKey(localKey, 'room:a');
    const sealed = sealJsonWithKey(key, 'room:a', 1);
    expect(openJsonWithKey(key, sealed, 'room:b')).toBe(null);
    expect(openJsonWithKey(sealingKey(localKey, 'room:b'), sealed)).toBe(null);
    expect(openJsonWithKey(key, `${sealed.slice(0, -2)}AA`)).toBe(null);
    expect(openJsonWithKey(key, 42)).toBe(null);
    expect(openJsonWithKey(() => new Uint8Array(3), sealed)).toBe(null);
  });

  it('refuses an empty label and values without JSON', () => {
    expect(() => sealJsonWithKey(localKey, '', 1)).toThrow(TypeError);
    expect(() => sealJsonWithKey(localKey, 'x', undefined)).toThrow(TypeError);
  });

  it('reads a 32-byte key as hex or base64url only', () => {
    expect(decodeKey32(toHex(localKey))).toEqual(localKey);
    expect(decodeKey32(` ${toBase64Url(localKey)}\n`)).toEqual(localKey);
    expect(decodeKey32(toHex(localKey.subarray(1)))).toBe(null);
    expect(decodeKey32('not a key')).toBe(null);
  });
});
