/**
 * Dashboard sessions without shared state: the cookie is `v1.<expires s>.<nonce>.<mac>`, signed with
 * a key derived from the password hash, so every node accepts it and a new password signs every
 * session out. The CSRF token is derived from the session's nonce, so it needs no store either.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'rt_dashboard';
export const SESSION_SECONDS = 12 * 3600;

export interface Session {
  csrf: string;
  /** When the session ends (ms since the epoch). */
  expiresMs: number;
}

const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('base64url');

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class SessionKeys {
  readonly #key: Buffer;

  constructor(passwordHash: string) {
    this.#key = createHmac('sha256', 'realtime dashboard session v1').update(passwordHash).digest();
  }

  /** A new session: the cookie's value and its CSRF token. */
  issue(nowMs: number): { cookie: string; csrf: string } {
    const nonce = randomBytes(16).toString('base64url');
    const body = `v1.${Math.floor(nowMs / 1000) + SESSION_SECONDS}.${nonce}`;
    return { cookie: `${body}.${mac(this.#key, body)}`, csrf: this.#csrf(nonce) };
  }

  /** The session of a cookie value, or undefined when it is forged, from another password, or expired. */
  read(cookie: string | undefined, nowMs: number): Session | undefined {
    const parts = cookie?.split('.');
    if (parts?.length !== 4 || parts[0] !== 'v1') return undefined;
    const [, expires, nonce, signature] = parts as [string, string, string, string];
    if (!same(signature, mac(this.#key, `v1.${expires}.${nonce}`))) return undefined;
    if (!/^\d{1,12}$/.test(expires) || Number(expires) * 1000 <= nowMs) return undefined;
    return { csrf: this.#csrf(nonce), expiresMs: Number(expires) * 1000 };
  }

  /** Whether `given` is the session's CSRF token (constant time). */
  csrfMatches(session: Session, given: string | undefined): boolean {
    return given !== undefined && same(given, session.csrf);
  }

  #csrf(nonce: string): string {
    return mac(this.#key, `csrf.${nonce}`);
  }
}
