import type { DashboardSessionStore } from '../dashboard-session-store.js';

/** Dashboard sessions in this process's memory: for tests and fakes (the embedded engine keeps them in SQLite). */
export class MemoryDashboardSessionStore implements DashboardSessionStore {
  #secret: Buffer | undefined;
  /** Open sessions: id -> when they end. */
  readonly #open = new Map<string, number>();

  signingSecret(candidate: Buffer): Buffer {
    this.#secret ??= Buffer.from(candidate);
    return Buffer.from(this.#secret);
  }

  storedSecret(): Buffer | undefined {
    return this.#secret === undefined ? undefined : Buffer.from(this.#secret);
  }

  open(id: string, expiresMs: number, nowMs: number): void {
    for (const [other, ends] of this.#open) if (ends <= nowMs) this.#open.delete(other);
    this.#open.set(id, expiresMs);
  }

  isOpen(id: string, nowMs: number): boolean {
    const ends = this.#open.get(id);
    return ends !== undefined && ends > nowMs;
  }

  close(id: string): void {
    this.#open.delete(id);
  }
}
