import { LIMITS } from '@realtime/protocol';
import type { EventSink } from './events.js';

interface UserPages {
  pages: number;
  offline: NodeJS.Timeout | undefined;
  /** When `user.offline` is due (while the timer runs). */
  dueAt: number;
}

/** A `user.offline` still to come, kept across a graceful restart. */
export interface PendingOffline {
  app: string;
  user: string;
  dueAt: number;
}

/**
 * `user.online` at a user's first page anywhere in the app; `user.offline` the offline delay after
 * their last page went, unless a page comes back in between (then nothing: no flapping).
 */
export class UserPresence {
  readonly #users = new Map<string, UserPages>();
  readonly #events: EventSink;
  readonly #delayMs: number;

  readonly #now: () => number;

  constructor(events: EventSink, options: { offlineDelayMs?: number; now?: () => number } = {}) {
    this.#events = events;
    this.#delayMs = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
    this.#now = options.now ?? Date.now;
  }

  opened(app: string, user: string): void {
    const key = `${app}\u0000${user}`;
    const entry = this.#users.get(key);
    if (!entry) {
      this.#users.set(key, { pages: 1, offline: undefined, dueAt: 0 });
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
    this.#wait(key, app, user, this.#now() + this.#delayMs);
  }

  #wait(key: string, app: string, user: string, dueAt: number): void {
    const entry = this.#users.get(key);
    if (!entry) return;
    entry.dueAt = dueAt;
    entry.offline = setTimeout(
      () => {
        this.#users.delete(key);
        this.#events.record(app, { type: 'user.offline', user });
      },
      Math.max(0, dueAt - this.#now()),
    );
  }

  /**
   * Takes back the offline timers a previous run left (graceful restart): a page of the user back in
   * time cancels it as usual, else `user.offline` goes out when it was due.
   */
  resume(pending: readonly PendingOffline[]): void {
    for (const { app, user, dueAt } of pending) {
      const key = `${app}\u0000${user}`;
      if (this.#users.has(key)) continue;
      this.#users.set(key, { pages: 0, offline: undefined, dueAt });
      this.#wait(key, app, user, dueAt);
    }
  }

  /** Stops the timers (shutdown) and hands back the offline reports still to come, to keep for the next run. */
  close(): PendingOffline[] {
    const pending: PendingOffline[] = [];
    for (const [key, entry] of this.#users) {
      clearTimeout(entry.offline);
      if (entry.pages > 0 || entry.offline === undefined) continue;
      const [app = '', user = ''] = key.split('\u0000');
      pending.push({ app, user, dueAt: entry.dueAt });
    }
    this.#users.clear();
    return pending;
  }
}
