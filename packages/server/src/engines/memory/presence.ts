import { LIMITS } from '@realtime/protocol';
import type { PresenceStore } from '../types.js';

interface UserState {
  pages: number;
  /** When the last page closed; the user stays online until this plus the offline delay. */
  lastClosedAt: number;
}

/** Online state of one process's pages. */
export class MemoryPresenceStore implements PresenceStore {
  readonly #users = new Map<string, UserState>();
  readonly #offlineDelayMs: number;

  constructor(options: { offlineDelayMs?: number } = {}) {
    this.#offlineDelayMs = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
  }

  pageOpened(app: string, user: string): void {
    const key = `${app}:${user}`;
    const state = this.#users.get(key);
    if (state) state.pages++;
    else this.#users.set(key, { pages: 1, lastClosedAt: 0 });
  }

  pageClosed(app: string, user: string, nowMs: number): void {
    const state = this.#users.get(`${app}:${user}`);
    if (!state || state.pages === 0) return;
    state.pages--;
    if (state.pages === 0) state.lastClosedAt = nowMs;
  }

  online(app: string, users: readonly string[], nowMs: number): boolean[] {
    return users.map((user) => {
      const key = `${app}:${user}`;
      const state = this.#users.get(key);
      if (!state) return false;
      if (state.pages > 0) return true;
      if (nowMs < state.lastClosedAt + this.#offlineDelayMs) return true;
      this.#users.delete(key);
      return false;
    });
  }

  close(): void {
    this.#users.clear();
  }
}
