import type { AppRevocations, RevocationStore, RevokeOutcome } from '../revocation-store.js';

interface Kept {
  before: number;
  until: number;
}

/** Revocations in this process's memory (tests, and stores of one process). */
export class MemoryRevocationStore implements RevocationStore {
  readonly #apps = new Map<string, { app: Kept | undefined; users: Map<string, Kept> }>();

  revoke(
    app: string,
    user: string | undefined,
    beforeMs: number,
    keepUntilMs: number,
    maxUsers: number,
    nowMs: number,
  ): RevokeOutcome {
    let entry = this.#apps.get(app);
    if (!entry) {
      entry = { app: undefined, users: new Map() };
      this.#apps.set(app, entry);
    }
    prune(entry, nowMs);
    const stored = user === undefined ? entry.app : entry.users.get(user);
    if (user !== undefined && stored === undefined && entry.users.size >= maxUsers) return 'full';
    const kept = later(stored, { before: beforeMs, until: keepUntilMs });
    if (user === undefined) entry.app = kept;
    else entry.users.set(user, kept);
    return 'stored';
  }

  read(app: string, nowMs: number): AppRevocations {
    const entry = this.#apps.get(app);
    if (!entry) return { app: undefined, users: new Map() };
    prune(entry, nowMs);
    return {
      app: entry.app?.before,
      users: new Map([...entry.users].map(([user, kept]) => [user, kept.before])),
    };
  }
}

/** The later time with the later end. */
export function later(stored: Kept | undefined, next: Kept): Kept {
  if (!stored) return next;
  return { before: Math.max(stored.before, next.before), until: Math.max(stored.until, next.until) };
}

function prune(entry: { app: Kept | undefined; users: Map<string, Kept> }, nowMs: number): void {
  if (entry.app && entry.app.until <= nowMs) entry.app = undefined;
  for (const [user, kept] of entry.users) if (kept.until <= nowMs) entry.users.delete(user);
}
