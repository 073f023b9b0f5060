import type { webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { derivedKey } from './derived-keys.js';
import { type ImportKey, VerificationKeys } from './verification-keys.js';

type CryptoKey = webcrypto.CryptoKey;

/** A fake import that records the bytes it was given and hands back a distinct object for each call. */
function fakeImport(): { importKey: ImportKey; imported: Uint8Array[] } {
  const imported: Uint8Array[] = [];
  const importKey: ImportKey = async (raw) => {
    imported.push(raw);
    return { raw } as unknown as CryptoKey;
  };
  return { importKey, imported };
}

describe('VerificationKeys', () => {
  it('imports a secret and key name once, then answers from the cache', async () => {
    const { importKey, imported } = fakeImport();
    const keys = new VerificationKeys(10, importKey);
    const first = await keys.get('secret-a', 'channels');
    expect(await keys.get('secret-a', 'channels')).toBe(first);
    expect(imported).toEqual([derivedKey('secret-a', 'channels')]);
  });

  it('keeps the key names of one secret apart', async () => {
    const { importKey, imported } = fakeImport();
    const keys = new VerificationKeys(10, importKey);
    expect(await keys.get('secret-a', 'channels')).not.toBe(await keys.get('secret-a', 'calls'));
    expect(imported).toEqual([derivedKey('secret-a', 'channels'), derivedKey('secret-a', 'calls')]);
  });

  it('a rotated secret is imported at once, never served the old key', async () => {
    const { importKey } = fakeImport();
    const keys = new VerificationKeys(10, importKey);
    const old = await keys.get('secret-old', 'channels');
    const rotated = await keys.get('secret-new', 'channels');
    expect(rotated).not.toBe(old);
    expect((rotated as unknown as { raw: Uint8Array }).raw).toEqual(derivedKey('secret-new', 'channels'));
  });

  it('holds at most max keys, dropping the oldest', async () => {
    const { importKey, imported } = fakeImport();
    const keys = new VerificationKeys(2, importKey);
    await keys.get('s1', 'channels');
    await keys.get('s2', 'channels');
    await keys.get('s3', 'channels');
    expect(keys.size).toBe(2);
    await keys.get('s3', 'channels');
    await keys.get('s2', 'channels');
    expect(imported).toHaveLength(3);
    await keys.get('s1', 'channels');
    expect(imported).toHaveLength(4);
    expect(keys.size).toBe(2);
  });

  it('does not remember a failed import', async () => {
    let calls = 0;
    const keys = new VerificationKeys(10, async () => {
      calls++;
      if (calls === 1) throw new Error('import failed');
      return {} as CryptoKey;
    });
    await expect(keys.get('s', 'channels')).rejects.toThrow('import failed');
    expect(keys.size).toBe(0);
    await expect(keys.get('s', 'channels')).resolves.toEqual({});
    expect(calls).toBe(2);
  });

  it('the default import yields a WebCrypto HMAC SHA-256 verify key', async () => {
    const key = await new VerificationKeys(1).get('secret-a', 'channels');
    expect(key.algorithm).toEqual({ name: 'HMAC', hash: { name: 'SHA-256' }, length: 256 });
    expect(key.usages).toEqual(['verify']);
  });
});
