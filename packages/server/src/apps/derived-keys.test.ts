import { describe, expect, it } from 'vitest';
import vectors from '../../../protocol/vectors/v1.json' with { type: 'json' };
import { derivedKey } from './derived-keys.js';

describe('derivedKey (node:crypto) agrees with the protocol vectors', () => {
  for (const v of vectors.keys) {
    it(`derives the keys of secret ${JSON.stringify(v.secret.slice(0, 12))}`, () => {
      for (const name of ['publish', 'webhook', 'channels', 'calls', 'streamGrant'] as const) {
        expect(derivedKey(v.secret, name).toString('hex')).toBe(v[name]);
        expect(derivedKey(v.secret, name)).toBe(derivedKey(v.secret, name));
      }
    });
  }
});
