/**
 * The dashboard's sessions over the store (docs/dashboard.md, "Sessions"): cookies signed with the
 * store's secret and the password hash (session.ts), and a record per session in the store, so
 * signing out on one node ends the session on all of them, and a restart keeps it.
 */
import { randomBytes } from 'node:crypto';
import type { DashboardSessionStore } from '../engines/dashboard-session-store.js';
import { looksSigned, type Session, SessionKeys } from './session.js';

export class DashboardSessions {
  readonly #store: DashboardSessionStore;
  readonly #passwordHash: string;
  /** The keys of the secret last read from the store. */
  #keys: { secret: Buffer; keys: SessionKeys } | undefined;

  constructor(store: DashboardSessionStore, passwordHash: string) {
    this.#store = store;
    this.#passwordHash = passwordHash;
  }

  /** A new session: its cookie's value and CSRF token; recorded in the store before it is answered. */
  async issue(nowMs: number): Promise<{ cookie: string; csrf: string }> {
    // The secret read again: a Redis that lost it (and got a new one from another node) is followed.
    const { keys } = await this.#fresh();
    const { cookie, session } = keys.issue(nowMs);
    await this.#store.open(session.id, session.expiresMs, nowMs);
    return { cookie, csrf: session.csrf };
  }

  /** The open session of a cookie value, or undefined: forged, expired, ended, or of another password. */
  async read(cookie: string | undefined, nowMs: number): Promise<Session | undefined> {
    if (cookie === undefined || !looksSigned(cookie)) return undefined;
    const known = this.#keys ?? (await this.#fresh());
    let session = known.keys.read(cookie, nowMs);
    if (session === undefined) {
      // Signed with a secret this node has not seen (the store lost its own and another node made
      // a new one): read it once more. A forged cookie costs one read, as a real one does.
      const fresh = await this.#fresh();
      if (!fresh.secret.equals(known.secret)) session = fresh.keys.read(cookie, nowMs);
    }
    if (session === undefined) return undefined;
    return (await this.#store.isOpen(session.id, nowMs)) ? session : undefined;
  }

  /** Ends the session on every node. */
  async end(session: Session): Promise<void> {
    await this.#store.close(session.id);
  }

  async #fresh(): Promise<{ secret: Buffer; keys: SessionKeys }> {
    const secret = Buffer.from(await this.#store.signingSecret(randomBytes(32)));
    if (this.#keys?.secret.equals(secret)) return this.#keys;
    this.#keys = { secret, keys: new SessionKeys(secret, this.#passwordHash) };
    return this.#keys;
  }
}
