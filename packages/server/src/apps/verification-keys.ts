import { webcrypto } from 'node:crypto';
import type { KeyName } from '@realtime/protocol';
import { derivedKey } from './derived-keys.js';

export type CryptoKey = webcrypto.CryptoKey;

/** Turns a derived key's bytes into the key object a verifier takes (WebCrypto's importKey in the service). */
export type ImportKey = (raw: Uint8Array) => Promise<CryptoKey>;

const importHmacVerifyKey: ImportKey = (raw) =>
  webcrypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);

/**
 * The imported HS256 verification key per secret and key name. jose imports raw bytes through
 * WebCrypto on every call, about a quarter of a join's CPU; this imports once. Keyed by the secret
 * itself (the key depends on nothing else), so a rotated secret misses and takes effect at once; the
 * old one ages out. Bounded: past `max` entries the oldest is dropped.
 */
export class VerificationKeys {
  readonly #keys = new Map<string, Promise<CryptoKey>>();
  readonly #max: number;
  readonly #importKey: ImportKey;

  constructor(max = 10_000, importKey: ImportKey = importHmacVerifyKey) {
    this.#max = max;
    this.#importKey = importKey;
  }

  get size(): number {
    return this.#keys.size;
  }

  get(secret: string, name: KeyName): Promise<CryptoKey> {
    const id = `${name}\u0000${secret}`;
    const cached = this.#keys.get(id);
    if (cached) return cached;
    if (this.#keys.size >= this.#max) {
      const oldest = this.#keys.keys().next();
      if (!oldest.done) this.#keys.delete(oldest.value);
    }
    const imported = this.#importKey(derivedKey(secret, name));
    this.#keys.set(id, imported);
    // A failed import is not remembered: the next token tries again.
    imported.catch(() => {
      if (this.#keys.get(id) === imported) this.#keys.delete(id);
    });
    return imported;
  }
}

/** The one the gateway's token checks share. */
export const verificationKeys = new VerificationKeys();
