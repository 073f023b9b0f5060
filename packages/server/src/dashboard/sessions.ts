/**
 * The dashboard's sessions over the store (docs/dashboard.md, "Sessions"): cookies signed with the
 * store's secret and the password hash (session.ts), and a record per session in the store, so
 * signing out on one node ends the session on all of them, and a restart keeps it.
 */
import { randomBytes } from 'node:crypto';
import type { DashboardSessionStore } from '../engines/dashboard-session-store.js';
import { looksLikeDevice, looksSigned, type Session, SessionKeys } from './session.js';

/** How often the sessions of open streams (live consoles) are read again: one signed out elsewhere ends by then. */
export const SESSION_CHECK_MS = 5_000;
/**
 * How often a cookie that does not verify may have this node read the secret again (it may be of a
 * secret another node made after the store lost its own): a flood of forged cookies costs a read a
 * second, no more.
 */
export const SECRET_READ_MS = 1_000;

interface Keys {
  secret: Buffer;
  keys: SessionKeys;
}

export class DashboardSessions {
  readonly #store: DashboardSessionStore;
  readonly #passwordHash: string;
  readonly #now: () => number;
  readonly #checkMs: number;
  /** The keys of the secret last read from the store. */
  #keys: Keys | undefined;
  /** When this node last read the secret (its own clock), and the read in flight. */
  #readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<Keys | undefined> | undefined;
  /** What to call when a watched session ends, by session id. */
  readonly #watchers = new Map<string, Set<() => void>>();
  #timer: NodeJS.Timeout | undefined;
  #checking = false;

  constructor(
    store: DashboardSessionStore,
    passwordHash: string,
    options: { now?: () => number; checkMs?: number } = {},
  ) {
    this.#store = store;
    this.#passwordHash = passwordHash;
    this.#now = options.now ?? Date.now;
    this.#checkMs = options.checkMs ?? SESSION_CHECK_MS;
  }

  /**
   * A new session: its cookie's value and CSRF token, and the known-browser cookie's value;
   * recorded in the store before it is answered.
   */
  async issue(nowMs: number): Promise<{ cookie: string; csrf: string; device: string }> {
    // The secret read again (made if none): a Redis that lost it (and got a new one from another
    // node) is followed. Only a right password gets here, so the write-if-absent is no one's to flood.
    const { keys } = this.#known(await this.#store.signingSecret(randomBytes(32)));
    this.#readAt = this.#now();
    const { cookie, session } = keys.issue(nowMs);
    await this.#store.open(session.id, session.expiresMs, nowMs);
    return { cookie, csrf: session.csrf, device: keys.device(nowMs) };
  }

  /**
   * Whether a known-browser cookie value is one of these keys, not expired. Reads as `read` does:
   * never a write, the secret at most once a second.
   */
  async knowsDevice(cookie: string | undefined, nowMs: number): Promise<boolean> {
    if (cookie === undefined || !looksLikeDevice(cookie)) return false;
    const known = this.#keys;
    if (known?.keys.knowsDevice(cookie, nowMs)) return true;
    const fresh = await this.#reread();
    return fresh !== undefined && fresh !== known && fresh.keys.knowsDevice(cookie, nowMs);
  }

  /** The open session of a cookie value, or undefined: forged, expired, ended, or of another password. */
  async read(cookie: string | undefined, nowMs: number): Promise<Session | undefined> {
    if (cookie === undefined || !looksSigned(cookie)) return undefined;
    const known = this.#keys;
    let session = known?.keys.read(cookie, nowMs);
    if (session === undefined) {
      // Maybe signed with a secret this node has not seen (the store lost its own and another node
      // made a new one): read it again, at most once a second, never writing.
      const fresh = await this.#reread();
      if (fresh !== undefined && fresh !== known) session = fresh.keys.read(cookie, nowMs);
    }
    if (session === undefined) return undefined;
    return (await this.#store.isOpen(session.id, nowMs)) ? session : undefined;
  }

  /** Ends the session on every node: its streams here at once, elsewhere at their next check. */
  async end(session: Session): Promise<void> {
    await this.#store.close(session.id);
    this.#ended(session.id);
  }

  /**
   * Calls `onEnd` once the session is signed out (here at once, on another node within
   * SESSION_CHECK_MS) or expired; answers the function that stops watching. For streams that
   * outlive the request that checked the session.
   */
  watch(session: Session, onEnd: () => void): () => void {
    let callbacks = this.#watchers.get(session.id);
    if (callbacks === undefined) {
      callbacks = new Set();
      this.#watchers.set(session.id, callbacks);
    }
    callbacks.add(onEnd);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#check(), this.#checkMs);
      this.#timer.unref();
    }
    return () => {
      callbacks.delete(onEnd);
      if (callbacks.size === 0 && this.#watchers.get(session.id) === callbacks) this.#watchers.delete(session.id);
      this.#idle();
    };
  }

  async #check(): Promise<void> {
    // A slow store must not pile checks up.
    if (this.#checking) return;
    this.#checking = true;
    try {
      for (const id of [...this.#watchers.keys()]) {
        try {
          if (!(await this.#store.isOpen(id, this.#now()))) this.#ended(id);
        } catch {
          // A store that does not answer ends nothing: the next check asks again.
        }
      }
    } finally {
      this.#checking = false;
    }
  }

  #ended(id: string): void {
    const callbacks = this.#watchers.get(id);
    if (callbacks === undefined) return;
    this.#watchers.delete(id);
    for (const onEnd of callbacks) onEnd();
    this.#idle();
  }

  #idle(): void {
    if (this.#watchers.size > 0 || this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * The keys of the stored secret, read again if the last read is SECRET_READ_MS old (requests at
   * once share one read); else those known (undefined: the store had no secret, so no session).
   */
  #reread(): Promise<Keys | undefined> {
    if (this.#reading !== undefined) return this.#reading;
    const now = this.#now();
    if (now - this.#readAt < SECRET_READ_MS) return Promise.resolve(this.#keys);
    this.#readAt = now;
    const reading = (async () => {
      try {
        const secret = await this.#store.storedSecret();
        return secret === undefined ? this.#keys : this.#known(secret);
      } finally {
        this.#reading = undefined;
      }
    })();
    this.#reading = reading;
    return reading;
  }

  /** The keys of `secret`: those known when it is the same (so they compare equal), else new ones. */
  #known(stored: Buffer): Keys {
    const secret = Buffer.from(stored);
    if (this.#keys?.secret.equals(secret)) return this.#keys;
    this.#keys = { secret, keys: new SessionKeys(secret, this.#passwordHash) };
    return this.#keys;
  }
}
