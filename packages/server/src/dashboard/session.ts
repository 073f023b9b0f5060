/**
 * Dashboard session cookies: `v2.<issued s>.<id>.<mac>`, signed with a key made from the service's
 * own random secret (kept in the store, never configured) and the password hash. Nobody who reads
 * the hash can sign one; a new hash makes every earlier cookie fail. A session lasts 12 hours from
 * its issue time, which the cookie carries under the signature, so no cookie can ask for longer.
 * Whether the session was ended (signed out) is the store's record's to say (sessions.ts).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { timingSafeEqualString } from '@realtime/protocol';

export const SESSION_COOKIE = 'rt_dashboard';
export const SESSION_SECONDS = 12 * 3600;
/**
 * A browser that signed in: `d1.<issued s>.<mac>`, set beside the session and kept after it. It
 * opens nothing; it only puts that browser's next sign-in ahead of addresses never seen
 * (check-queue.ts), which a flood cannot make without the password.
 */
export const DEVICE_COOKIE = 'rt_dashboard_device';
export const DEVICE_SECONDS = 30 * 24 * 3600;
/** How far ahead of this node's clock an issue time may be: another node's clock, a little ahead. */
const SKEW_S = 60;
const FORM = /^v2\.(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;
const DEVICE_FORM = /^d1\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/;

export interface Session {
  /** The session's name in the store. */
  id: string;
  csrf: string;
  /** When the session began (ms since the epoch, whole seconds). */
  issuedMs: number;
  /** When the session ends: 12 hours after it began. */
  expiresMs: number;
}

const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('base64url');

/** Whether `given` is the session's CSRF token (constant time). */
export function csrfMatches(session: Session, given: string | undefined): boolean {
  return given !== undefined && timingSafeEqualString(given, session.csrf);
}

/** Whether a cookie value has the form of one this service signs (its signature unchecked). */
export function looksSigned(cookie: string): boolean {
  return FORM.test(cookie);
}

/** Whether a value has the form of a known-browser cookie (its signature unchecked). */
export function looksLikeDevice(cookie: string): boolean {
  return DEVICE_FORM.test(cookie);
}

export class SessionKeys {
  readonly #key: Buffer;

  /** `secret`: the store's random signing secret; `passwordHash`: the hash as configured. */
  constructor(secret: Buffer, passwordHash: string) {
    this.#key = createHmac('sha256', secret).update(`realtime dashboard session v2\0${passwordHash}`).digest();
  }

  /** A new session, and its cookie's value. */
  issue(nowMs: number): { cookie: string; session: Session } {
    const issued = Math.floor(nowMs / 1000);
    const id = randomBytes(16).toString('base64url');
    const body = `v2.${issued}.${id}`;
    return { cookie: `${body}.${mac(this.#key, body)}`, session: this.#session(issued, id) };
  }

  /**
   * The session a cookie value names, or undefined when it is forged, of another secret or
   * password, issued ahead of this clock, or expired. Not whether it was ended: ask the store.
   */
  read(cookie: string | undefined, nowMs: number): Session | undefined {
    const parts = cookie === undefined ? null : FORM.exec(cookie);
    if (!parts) return undefined;
    const [, issuedText, id, signature] = parts as unknown as [string, string, string, string];
    if (!timingSafeEqualString(signature, mac(this.#key, `v2.${issuedText}.${id}`))) return undefined;
    const issued = Number(issuedText);
    if (issued * 1000 > nowMs + SKEW_S * 1000) return undefined;
    const session = this.#session(issued, id);
    return session.expiresMs > nowMs ? session : undefined;
  }

  /** The known-browser cookie's value, for a sign-in at `nowMs`. */
  device(nowMs: number): string {
    const body = `d1.${Math.floor(nowMs / 1000)}`;
    return `${body}.${mac(this.#key, body)}`;
  }

  /** Whether a value is a known-browser cookie of these keys, issued in the last DEVICE_SECONDS. */
  knowsDevice(cookie: string | undefined, nowMs: number): boolean {
    const parts = cookie === undefined ? null : DEVICE_FORM.exec(cookie);
    if (!parts) return false;
    const [, issuedText, signature] = parts as unknown as [string, string, string];
    if (!timingSafeEqualString(signature, mac(this.#key, `d1.${issuedText}`))) return false;
    const issuedMs = Number(issuedText) * 1000;
    return issuedMs <= nowMs + SKEW_S * 1000 && issuedMs + DEVICE_SECONDS * 1000 > nowMs;
  }

  #session(issued: number, id: string): Session {
    return {
      id,
      csrf: mac(this.#key, `csrf.${id}`),
      issuedMs: issued * 1000,
      expiresMs: (issued + SESSION_SECONDS) * 1000,
    };
  }
}
