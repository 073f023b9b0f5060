import { LIMITS } from '@realtime/protocol';
import type { EventSink } from './events.js';

interface UserPages {
  pages: number;
  offline: NodeJS.Timeout | undefined;
}

/**
 * `user.online` at a user's first page anywhere in the app; `user.offline` the offline delay after
 * their last page went, unless a page comes back in between (then nothing: no flapping).
 */
export class UserPresence {
  readonly #users = new Map<string, UserPages>();
  readonly #events: EventSink;
  readonly #delayMs: number;

  constructor(events: EventSink, options: { offlineDelayMs?: number } = {}) {
    this.#events = events;
    this.#delayMs = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
  }

  opened(app: string, user: string): void {
    const key = `${app}\u0000${user}`;
    const entry = this.#users.get(key);
    if (!entry) {
      this.#users.set(key, { pages: 1, offline: undefined });
      this.#events.record(app, { type: 'user.online', user });
      return;
    }
    entry.pages++;
    clearTimeout(entry.offline);
    entry.offline = undefined;
  }

  closed(app: string, user: string): void {
    const key = `${app}\u0000${user}`;
    const entry = this.#users.get(key);
    if (!entry || entry.pages === 0) return;
    entry.pages--;
    if (entry.pages > 0) return;
    entry.offline = setTimeout(() => {
      this.#users.delete(key);
      this.#events.record(app, { type: 'user.offline', user });
    }, this.#delayMs);
  }

  /** Stops the pending offline timers (shutdown): those users' offline is not reported. */
  close(): void {
    for (const entry of this.#users.values()) clearTimeout(entry.offline);
    this.#users.clear();
  }
}
