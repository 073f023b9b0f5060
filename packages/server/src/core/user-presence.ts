import { LIMITS } from '@realtime/protocol';
import type { Logger } from 'pino';
import type { PresenceStore } from '../engines/types.js';
import { diagnostics } from './diagnostics.js';
import type { EventSink } from './events.js';

/** Users whose `user.offline` is claimed per read: a burst of closes is reported over a few turns. */
const TAKE_AT_ONCE = 500;

/**
 * `user.online` at a user's first page on any node; `user.offline` the offline delay after their last
 * page went, unless a page came back in between (no flapping). The presence store decides both and
 * hands each report to one node; this reports them, and polls for the offline ones that fell due.
 */
export class UserPresence {
  readonly #presence: PresenceStore;
  readonly #events: Pick<EventSink, 'record'>;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #node: string;
  readonly #pollMs: number;
  #timer: NodeJS.Timeout | undefined;
  #polling = false;

  constructor(deps: {
    /** This node: users it reports online or offline are told on the diagnostics channels as its own. */
    node: string;
    presence: PresenceStore;
    /** Where `user.online` and `user.offline` go: Departures, which tries them again until stored. */
    events: Pick<EventSink, 'record'>;
    log: Logger;
    now: () => number;
    offlineDelayMs?: number;
  }) {
    this.#node = deps.node;
    this.#presence = deps.presence;
    this.#events = deps.events;
    this.#log = deps.log;
    this.#now = deps.now;
    // A tenth of the delay, between 20 ms and 250 ms: reports go out close to when they fall due.
    this.#pollMs = Math.min(250, Math.max(20, (deps.offlineDelayMs ?? LIMITS.offlineDelayMs) / 10));
  }

  /** Starts polling for the offline reports that fall due. */
  start(): void {
    this.#timer = setInterval(() => void this.#poll(), this.#pollMs);
    this.#timer.unref();
  }

  /**
   * A page opened as the user; resolves once the presence store has it and `user.online`, when due,
   * was stored. Rejects only when the presence store failed.
   */
  async opened(app: string, user: string, page: string): Promise<void> {
    if (!(await this.#presence.pageOpened(app, user, page, this.#now()))) return;
    if (diagnostics.user.hasSubscribers) diagnostics.user.publish({ node: this.#node, app, type: 'user.online', user });
    try {
      await this.#events.record(app, { type: 'user.online', user });
    } catch (error) {
      // The page is open either way: only the report is lost (logged), like a webhook that failed.
      this.#log.error({ err: error, app }, 'recording user.online failed');
    }
  }

  async closed(app: string, user: string, page: string): Promise<void> {
    await this.#presence.pageClosed(app, user, page, this.#now());
  }

  /** Never throws: a failed read or record is logged and the next poll tries again. */
  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      for (;;) {
        const gone = await this.#presence.takeOffline(this.#now(), TAKE_AT_ONCE);
        for (const { app, user } of gone) {
          if (diagnostics.user.hasSubscribers) {
            diagnostics.user.publish({ node: this.#node, app, type: 'user.offline', user });
          }
          try {
            await this.#events.record(app, { type: 'user.offline', user });
          } catch (error) {
            // Claimed and not stored (an events sink that does not try again): lost, logged.
            this.#log.error({ err: error, app }, 'recording user.offline failed');
          }
        }
        if (gone.length < TAKE_AT_ONCE) break;
      }
    } catch (error) {
      this.#log.error({ err: error }, 'reading the offline reports due failed');
    } finally {
      this.#polling = false;
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}
