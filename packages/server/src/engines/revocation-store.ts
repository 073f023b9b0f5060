import type { MaybePromise } from './maybe-promise.js';

/**
 * Token revocations of one app as stored: the app-wide one (tokens of every user issued before it)
 * and one per user. Times are milliseconds since the epoch.
 */
export interface AppRevocations {
  /** Tokens of the whole app issued before this are refused; undefined when none is in force. */
  app: number | undefined;
  /** Tokens of a user issued before its time are refused. */
  users: ReadonlyMap<string, number>;
}

/** What `revoke` did: stored (or an earlier time was already covered), or refused as over the bound. */
export type RevokeOutcome = 'stored' | 'full';

/**
 * Revocations of identity and room tokens, shared by every node (and kept across restarts where the
 * engine keeps anything), read by every node's cache (users/token-revocations.ts). Contract:
 * - `revoke` keeps the later `before` of the one stored and the new one, for the app (`user`
 *   undefined) or one user, until `keepUntilMs`: past that no token issued before it can still be
 *   valid, and it is dropped (the later of the two ends is kept with the later time).
 * - A user revocation that would make more than `maxUsers` in force for the app is refused
 *   ('full') and stores nothing; replacing one in force never is. The app-wide one is never refused.
 * - `read` answers what is in force at `nowMs` (ended ones left out), for one app.
 */
export interface RevocationStore {
  revoke(
    app: string,
    user: string | undefined,
    beforeMs: number,
    keepUntilMs: number,
    maxUsers: number,
    nowMs: number,
  ): MaybePromise<RevokeOutcome>;
  read(app: string, nowMs: number): MaybePromise<AppRevocations>;
}
