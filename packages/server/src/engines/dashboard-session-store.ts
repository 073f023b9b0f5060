/**
 * The dashboard's session state, shared by every node (docs/dashboard.md, "Sessions"): the secret
 * sessions are signed with, and one record per session so that signing out ends it everywhere.
 * Kept apart from the password hash: whoever reads the hash (a command line, a config file) learns
 * nothing that makes a session.
 */
import type { MaybePromise } from './maybe-promise.js';

export interface DashboardSessionStore {
  /**
   * The secret sessions are signed with: the stored one, or `candidate` stored and answered when
   * there is none yet. Create-if-absent in one step, so nodes racing at their first sign-in agree;
   * kept across restarts (the data folder's, or Redis's while it keeps its data).
   */
  signingSecret(candidate: Buffer): MaybePromise<Buffer>;
  /**
   * The stored secret, or undefined when none was made yet: a read only, for checking a cookie
   * (anyone can send one, so checking it must never write).
   */
  storedSecret(): MaybePromise<Buffer | undefined>;
  /** Records an open session until `expiresMs` (caller's clock; `nowMs` bounds how long it is kept). */
  open(id: string, expiresMs: number, nowMs: number): MaybePromise<void>;
  /** Whether the session is recorded, not closed, and not expired at `nowMs`. */
  isOpen(id: string, nowMs: number): MaybePromise<boolean>;
  /** Ends the session on every node; one not open changes nothing. */
  close(id: string): MaybePromise<void>;
}
