import { describe, expect, it } from 'vitest';
import { SESSION_SECONDS, SessionKeys } from './session.js';

const T0 = 1_800_000_000_000;

describe('dashboard sessions', () => {
  it('reads back what it issued until it expires, with the same CSRF token', () => {
    const keys = new SessionKeys('scrypt$hash-a');
    const { cookie, csrf } = keys.issue(T0);
    const expiresMs = T0 + SESSION_SECONDS * 1000;
    expect(keys.read(cookie, T0)).toStrictEqual({ csrf, expiresMs });
    expect(keys.read(cookie, T0 + SESSION_SECONDS * 1000 - 1000)).toStrictEqual({ csrf, expiresMs });
    expect(keys.read(cookie, T0 + SESSION_SECONDS * 1000)).toBeUndefined();
    // Another node with the same password hash takes it; another hash does not.
    expect(new SessionKeys('scrypt$hash-a').read(cookie, T0)).toStrictEqual({ csrf, expiresMs });
    expect(new SessionKeys('scrypt$hash-b').read(cookie, T0)).toBeUndefined();
  });

  it('refuses forged, stretched and malformed cookies, and any other CSRF token', () => {
    const keys = new SessionKeys('scrypt$hash-a');
    const { cookie, csrf } = keys.issue(T0);
    const [v, expires, nonce, mac] = cookie.split('.') as [string, string, string, string];
    const session = keys.read(cookie, T0);
    if (!session) throw new Error('the issued cookie was not read back');
    for (const forged of [
      undefined,
      '',
      `${v}.${Number(expires) + 3600}.${nonce}.${mac}`,
      `${v}.${expires}.${nonce}x.${mac}`,
      `${v}.${expires}.${nonce}.${mac.slice(0, -1)}A`,
      `v2.${expires}.${nonce}.${mac}`,
      `${cookie}.extra`,
    ]) {
      expect(keys.read(forged, T0)).toBeUndefined();
    }
    expect(keys.csrfMatches(session, csrf)).toBe(true);
    expect(keys.csrfMatches(session, undefined)).toBe(false);
    expect(keys.csrfMatches(session, keys.issue(T0).csrf)).toBe(false);
  });
});
