import { fromHex, open as openText, roomLabel, toBase64Url, toHex, userLabel } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import vectors from '../../protocol/vectors/v1.json' with { type: 'json' };
import { Realtime } from './client.js';
import type { LocalKeyInput } from './local-key.js';

const clients: Realtime[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

// Sealing never touches the network; the address only has to be valid.
function client(localKey?: LocalKeyInput): Realtime {
  const c = new Realtime({ url: 'http://127.0.0.1:9', key: 'app1', secret: 's3cret', localKey });
  clients.push(c);
  return c;
}

const vectorKeyHex = vectors.seal[0]?.local_key ?? '';
const vectorKey = fromHex(vectorKeyHex) ?? new Uint8Array();

/** What open() should give for a vector's plaintext: its JSON value, or null when it is not JSON. */
function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

describe('seal and open', () => {
  it('round-trips JSON values under a label', () => {
    const c = client(vectorKeyHex);
    for (const value of [{ text: 'hi', n: [1, 2.5, null, true] }, 'é ✓ \u2028', 0, [], false]) {
      const sealed = c.seal(roomLabel('lobby'), value);
      expect(sealed.startsWith('room:lobby:1.')).toBe(true);
      expect(c.open(sealed)).toEqual(value);
      expect(c.open(sealed, 'room:lobby')).toEqual(value);
      // The SDK's sealed value is the protocol's: JSON text under the label's key.
      expect(openText(vectorKey, sealed)).toBe(JSON.stringify(value));
    }
  });

  it('uses a fresh nonce for every seal', () => {
    const c = client(vectorKeyHex);
    expect(c.seal('room:a', 1)).not.toBe(c.seal('room:a', 1));
  });

  for (const v of vectors.seal) {
    it(`opens the vector sealed under ${JSON.stringify(v.label)}`, () => {
      const c = client(v.local_key);
      const expected = jsonOrNull(v.plaintext);
      expect(c.open(v.sealed)).toEqual(expected);
      expect(c.open(v.sealed, v.label)).toEqual(expected);
      expect(toHex(c.keyFor(v.label))).toBe(v.key);
      // Another app's local key opens nothing; neither does the right key with another expected label.
      expect(client(vectors.local_key_other_app).open(v.sealed)).toBeNull();
      expect(c.open(v.sealed, `${v.label}x`)).toBeNull();
    });
  }

  it('the vector whose plaintext is not JSON opens to null', () => {
    const notJson = vectors.seal.filter((v) => jsonOrNull(v.plaintext) === null && v.plaintext !== 'null');
    expect(notJson.length).toBeGreaterThan(0);
    for (const v of notJson) {
      expect(openText(vectorKey, v.sealed)).toBe(v.plaintext);
      expect(client(v.local_key).open(v.sealed)).toBeNull();
    }
  });

  for (const v of vectors.open_null) {
    it(`open() gives null for a value that is ${v.why}`, () => {
      expect(client(vectorKeyHex).open(v.value)).toBeNull();
    });
  }

  it('open() gives null, without throwing, for values of the wrong type', () => {
    const c = client(vectorKeyHex);
    const sealed = c.seal('room:lobby', 1);
    for (const value of [undefined, null, 42, true, {}, [sealed], new TextEncoder().encode(sealed), Symbol('x'), 1n]) {
      expect(c.open(value)).toBeNull();
    }
  });

  it('refuses to seal values without JSON form and empty labels', () => {
    const c = client(vectorKeyHex);
    expect(() => c.seal('room:a', undefined)).toThrow(TypeError);
    expect(() => c.seal('room:a', () => 1)).toThrow(TypeError);
    expect(() => c.seal('room:a', 1n)).toThrow(TypeError);
    expect(() => c.seal('', 1)).toThrow(TypeError);
    expect(() => c.keyFor('')).toThrow(TypeError);
  });
});

describe('local key', () => {
  it('accepts bytes, hex and base64url alike', () => {
    const fromBytes = client(vectorKey).keyFor(userLabel('alice'));
    expect(toHex(fromBytes)).toBe(vectors.seal.find((v) => v.label === 'user:alice')?.key);
    expect(client(vectorKeyHex).keyFor('user:alice')).toEqual(fromBytes);
    expect(client(vectorKeyHex.toUpperCase()).keyFor('user:alice')).toEqual(fromBytes);
    expect(client(toBase64Url(vectorKey)).keyFor('user:alice')).toEqual(fromBytes);
  });

  it('keeps its own copy of the key bytes', () => {
    const bytes = Uint8Array.from(vectorKey);
    const c = client(bytes);
    bytes.fill(0);
    expect(toHex(c.keyFor('room:lobby'))).toBe(vectors.seal[0]?.key);
  });

  it('throws a TypeError for a bad local key', () => {
    const bad: unknown[] = [
      new Uint8Array(31),
      new Uint8Array(33),
      vectorKeyHex.slice(1),
      `${vectorKeyHex}00`,
      'z'.repeat(64),
      `${toBase64Url(vectorKey)}=`,
      toBase64Url(new Uint8Array(31)),
      // Standard base64 (with `/`), not base64url.
      Buffer.alloc(32, 0xff).toString('base64').replace(/=+$/, ''),
      '',
      42,
      null,
    ];
    for (const localKey of bad) {
      expect(() => client(localKey as LocalKeyInput)).toThrow(TypeError);
    }
    expect(() => client('z'.repeat(64))).toThrow(/localKey/);
  });

  it('the error never shows the key', () => {
    const almost = `${vectorKeyHex.slice(0, 62)}zz`;
    let error: unknown;
    try {
      client(almost);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).not.toContain(almost);
  });

  it('seal, open and keyFor throw a TypeError naming localKey when it is missing', () => {
    const c = client();
    expect(() => c.seal('room:a', 1)).toThrow(/localKey/);
    expect(() => c.open('room:a:1.AAAA')).toThrow(TypeError);
    expect(() => c.keyFor('room:a')).toThrow(TypeError);
  });
});
