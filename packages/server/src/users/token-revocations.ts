import { LIMITS } from '@realtime/protocol';
import type { Logger } from 'pino';
import type { AppRevocations, MaybePromise, RevocationStore } from '../engines/types.js';

/** What a revocation check reads of a token: its claims' `iat` and `exp` (seconds). */
export interface IssuedClaims {
  iat?: unknown;
  exp: number;
}

/** Checks tokens against the revocations in force (the gateway's hello, the rooms' join). */
export interface RevocationCheck {
  /** Whether the token was issued before a revocation of the app's tokens or of `user`'s. */
  revoked(app: string, user: string | undefined, claims: IssuedClaims): MaybePromise<boolean>;
}

/** The longest a token can be valid: its 24 hours ahead plus the leeway on each side (ms). */
const LONGEST_VALID_MS = (LIMITS.tokenMaxLifetimeSeconds + 2 * LIMITS.tokenLeewaySeconds) * 1000;

/** How long a revocation is kept: past it, no token issued before it can still be valid. */
export function revocationEnd(beforeMs: number): number {
  return beforeMs + LONGEST_VALID_MS;
}

/**
 * When a token counts as issued (ms): its `iat`, but never earlier than 24 hours (and the leeway)
 * before its `exp`, as no token may live longer. So a token without `iat`, or one that claims a
 * longer life, counts as issued as late as its `exp` allows, and a revocation kept until
 * `revocationEnd` covers every token issued before it that could still be valid.
 */
export function issuedAt(claims: IssuedClaims): number {
  const floor = claims.exp * 1000 - (LIMITS.tokenMaxLifetimeSeconds + LIMITS.tokenLeewaySeconds) * 1000;
  // An `iat` after the token's own `exp` (one written in milliseconds, or far ahead) says nothing
  // true: taken as absent, so such a token counts as issued as early as its `exp` allows and a
  // revocation still covers it.
  const plausible = typeof claims.iat === 'number' && Number.isFinite(claims.iat) && claims.iat <= claims.exp;
  const iat = plausible ? (claims.iat as number) * 1000 : Number.NEGATIVE_INFINITY;
  return Math.max(iat, floor);
}

/** Whether a token issued at `issuedMs` for `user` falls under the revocations. */
export function covers(revocations: AppRevocations, user: string | undefined, issuedMs: number): boolean {
  if (revocations.app !== undefined && issuedMs < revocations.app) return true;
  if (user === undefined) return false;
  const before = revocations.users.get(user);
  return before !== undefined && issuedMs < before;
}

interface Cached {
  revocations: AppRevocations;
  readAt: number;
}

/** A read of one app's revocations under way; `missed` once a revocation was told meanwhile (not cached then). */
interface Reading {
  answer: Promise<AppRevocations>;
  missed: boolean;
}

/** How long a node trusts its cached revocations of an app without being told of a change. */
export const REVOCATIONS_STALE_MS = 30_000;
/** Apps whose revocations a node keeps cached; past it the cache starts over. */
const MAX_CACHED_APPS = 10_000;

export interface TokenRevocationsDeps {
  store: RevocationStore;
  log: Logger;
  now: () => number;
}

/**
 * A node's cache of the revocations in force, per app: read from the store once per app, then
 * answered from memory on every hello and join. A revocation is told to every node by a broadcast
 * (`tokens.revoked`), which updates the cache at once; a missed broadcast (a subscriber's gap) is
 * bounded by the cache's age (`REVOCATIONS_STALE_MS`), and a gap clears it.
 */
export class TokenRevocations implements RevocationCheck {
  readonly #deps: TokenRevocationsDeps;
  readonly #apps = new Map<string, Cached>();
  readonly #reading = new Map<string, Reading>();

  constructor(deps: TokenRevocationsDeps) {
    this.#deps = deps;
  }

  revoked(app: string, user: string | undefined, claims: IssuedClaims): MaybePromise<boolean> {
    const issued = issuedAt(claims);
    const cached = this.#apps.get(app);
    if (cached && this.#deps.now() - cached.readAt < REVOCATIONS_STALE_MS) {
      return covers(cached.revocations, user, issued);
    }
    return this.#read(app).then((revocations) => covers(revocations, user, issued));
  }

  /** A revocation this node made or was told of: in the cache at once (the store has it already). */
  noted(app: string, user: string | undefined, beforeMs: number): void {
    // A read under way may have read the store before this revocation: its answer must not land
    // in the cache over the one noted here (it is still answered to whoever asked).
    this.#abandon(app);
    const cached = this.#apps.get(app);
    // None cached: read whole from the store when next needed.
    if (!cached) return;
    const { revocations } = cached;
    if (user === undefined) {
      revocations.app = Math.max(revocations.app ?? Number.NEGATIVE_INFINITY, beforeMs);
      return;
    }
    const users = new Map(revocations.users);
    users.set(user, Math.max(users.get(user) ?? Number.NEGATIVE_INFINITY, beforeMs));
    cached.revocations = { app: revocations.app, users };
  }

  /** Publications may have been missed: everything is read again. */
  forget(): void {
    this.#apps.clear();
    for (const app of [...this.#reading.keys()]) this.#abandon(app);
  }

  /** The read under way for the app, if any, is answered but not cached; the next check reads again. */
  #abandon(app: string): void {
    const reading = this.#reading.get(app);
    if (!reading) return;
    reading.missed = true;
    this.#reading.delete(app);
  }

  #read(app: string): Promise<AppRevocations> {
    const running = this.#reading.get(app);
    if (running) return running.answer;
    const readAt = this.#deps.now();
    const reading: Reading = {
      missed: false,
      answer: Promise.resolve()
        .then(() => this.#deps.store.read(app, readAt))
        .then((revocations) => {
          if (!reading.missed) {
            if (this.#apps.size >= MAX_CACHED_APPS) this.#apps.clear();
            this.#apps.set(app, { revocations: { app: revocations.app, users: new Map(revocations.users) }, readAt });
          }
          return revocations;
        })
        .finally(() => {
          if (this.#reading.get(app) === reading) this.#reading.delete(app);
        }),
    };
    this.#reading.set(app, reading);
    return reading.answer;
  }
}
