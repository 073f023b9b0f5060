import type { Logger } from 'pino';
import type { Broker, Departure, MemberCount, NodeClaim, PresenceStore } from '../engines/types.js';
import type { AppEvent, EventSink } from './events.js';
import { memberChangeData } from './member-windows.js';

/** How departures that could not be written are tried again, and how much of them a node keeps. */
export interface DepartureOptions {
  /** The first wait before what failed is tried again; it doubles after each failure, up to `retryMaxMs`. */
  retryMs: number;
  retryMaxMs: number;
  /** How often the node checks the store's records of its pages against the pages it has. */
  reconcileMs: number;
  /**
   * Pages, and webhook events, waiting to be tried again, at most (each). Past it the oldest page is
   * left to the next check (`reconcileMs`), which finds it in the store anyway; the oldest event is
   * dropped and logged: a webhook the receiver never gets.
   */
  maxWaiting: number;
}

export const DEPARTURE_DEFAULTS: Readonly<DepartureOptions> = {
  retryMs: 100,
  retryMaxMs: 5000,
  reconcileMs: 30_000,
  maxWaiting: 10_000,
};

/** Pages closed in the store per step (a late close, a sweep of a dead node): one bounded script each. */
const CLOSE_AT_ONCE = 100;

export interface DepartureDeps {
  /** This node's id: the store's records of its pages carry it. */
  node: string;
  presence: PresenceStore;
  broker: Broker;
  events: Pick<EventSink, 'record'>;
  log: Logger;
  now: () => number;
  /** Whether this node has the page: open, or closing with its clean-up still running. */
  holds(page: string): boolean;
  options?: Partial<DepartureOptions>;
}

/**
 * What ends when pages go, written until it is. A page whose close could not be written (the store
 * was away) is closed in the store later, and what that ended is reported as its close would have;
 * a webhook event (member.left, room.vacated, user.offline, ...) that could not be stored waits, in
 * order, and is tried again. Both retry with capped exponential backoff, bounded in memory; and every
 * `reconcileMs` the node closes the store's records of pages it does not have, whatever left them
 * (a retry dropped at the bound, a crash of the clean-up). Failures never reach the caller.
 */
export class Departures {
  readonly #deps: DepartureDeps;
  readonly #options: DepartureOptions;
  /** Pages to close in the store, oldest first (a Set keeps insertion order). */
  readonly #pages = new Set<string>();
  /** Webhook events to store, in the order they came. */
  readonly #reports: { app: string; event: AppEvent }[] = [];
  #delay: number;
  #retry: NodeJS.Timeout | undefined;
  #reconcile: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #closed = false;

  constructor(deps: DepartureDeps) {
    this.#deps = deps;
    this.#options = { ...DEPARTURE_DEFAULTS, ...deps.options };
    this.#delay = this.#options.retryMs;
  }

  /** Starts the periodic check of the store's records against this node's pages. */
  start(): void {
    this.#reconcile = setInterval(() => void this.reconcile(), this.#options.reconcileMs);
    this.#reconcile.unref();
  }

  /** Pages and webhook events waiting for a retry (metrics, tests). */
  get waiting(): { pages: number; reports: number } {
    return { pages: this.#pages.size, reports: this.#reports.length };
  }

  /**
   * Records an app event; one the store did not take waits and is tried again until it does. Events
   * keep their order: while some wait, a new one waits behind them. Never rejects.
   */
  async record(app: string, event: AppEvent): Promise<void> {
    if (this.#reports.length === 0) {
      try {
        await this.#deps.events.record(app, event);
        return;
      } catch (error) {
        this.#deps.log.warn({ err: error, app, type: event.type }, 'recording a webhook event failed: tried again');
      }
    }
    if (this.#reports.length >= this.#options.maxWaiting) {
      const dropped = this.#reports.shift();
      this.#deps.log.error(
        { app: dropped?.app, type: dropped?.event.type, bound: this.#options.maxWaiting },
        'too many webhook events wait for a retry: the oldest was dropped',
      );
    }
    this.#reports.push({ app, event });
    this.#schedule();
  }

  /** A page whose close could not be written: its records are closed in the store once it answers. */
  closeLater(page: string): void {
    if (this.#pages.size >= this.#options.maxWaiting) {
      // The check of the store's records (every reconcileMs) still finds it: only the retry is late.
      const oldest = this.#pages.values().next().value;
      if (oldest !== undefined) this.#pages.delete(oldest);
    }
    this.#pages.add(page);
    this.#schedule();
  }

  /**
   * Takes one chunk of a dead node's pages out of presence (the node registry claimed it) and reports
   * what that ended; 'more' while pages are left.
   */
  async sweepNode(claim: NodeClaim): Promise<'done' | 'more'> {
    const { departures, done } = await this.#deps.presence.sweepNode(claim, this.#deps.now(), CLOSE_AT_ONCE);
    await this.report(departures);
    return done ? 'done' : 'more';
  }

  /**
   * Reports what pages ended (a sweep of a dead node, a late close): each webhook event (tried until
   * stored), and each `$member.left` to the room's pages with the room's count read after all of it.
   * A publish that fails is logged: the pages of a node cut off from the broker resume on its gap.
   */
  async report(departures: readonly Departure[]): Promise<void> {
    const counts = await this.#countsAfter(departures);
    for (const departure of departures) {
      const { app, room } = departure;
      if (departure.type === 'room.vacated') {
        await this.record(app, { type: 'room.vacated', room });
        continue;
      }
      const { member } = departure;
      await this.record(app, { type: 'member.left', room, user: member.user });
      try {
        const data = memberChangeData(member, counts.get(`${app}\u0000${room}`));
        await this.#deps.broker.publish(
          [{ kind: 'room', app, room, event: '$member.left', data, presence: true }],
          this.#deps.now(),
        );
      } catch (error) {
        this.#deps.log.error({ err: error, app }, 'announcing a departure failed');
      }
    }
  }

  /** Closes the store's records of this node's pages that it does not have. Never throws. */
  async reconcile(): Promise<void> {
    let listed: string[];
    try {
      listed = await this.#deps.presence.nodePages(this.#deps.node);
    } catch (error) {
      this.#deps.log.warn({ err: error }, "reading this node's pages in the store failed");
      return;
    }
    const orphans = listed.filter((page) => !this.#deps.holds(page) && !this.#pages.has(page));
    if (orphans.length === 0) return;
    // Within the bound: what does not fit stays in the store, and the next check finds it again.
    const room = Math.max(0, this.#options.maxWaiting - this.#pages.size);
    this.#deps.log.warn(
      { pages: orphans.length, left: Math.max(0, orphans.length - room) },
      'records of pages this node no longer has: closing them',
    );
    for (const page of orphans.slice(0, room)) this.#pages.add(page);
    await this.flush();
  }

  /** Tries what waits now (pages, then events); resolves when this try ended. Never rejects. */
  flush(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  /**
   * Stops the timers. Pages still waiting are left in the store under this node, which the other
   * nodes sweep once its lease ends; webhook events still waiting are lost, and logged.
   */
  close(): void {
    if (this.#reports.length > 0) {
      this.#deps.log.error({ events: this.#reports.length }, 'stopping with webhook events not stored: they are lost');
    }
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#reconcile);
  }

  #schedule(): void {
    if (this.#retry !== undefined || this.#closed) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      void this.flush();
    }, this.#delay);
    this.#retry.unref();
  }

  async #flush(): Promise<void> {
    // Apart: webhook events still go when the pages cannot be closed yet, and the other way round.
    let failure: unknown;
    try {
      while (this.#pages.size > 0) {
        const batch = [...this.#pages].slice(0, CLOSE_AT_ONCE);
        const departures = await this.#deps.presence.closePages(batch, this.#deps.now());
        for (const page of batch) this.#pages.delete(page);
        await this.report(departures);
      }
    } catch (error) {
      failure = error;
    }
    try {
      while (this.#reports.length > 0) {
        const next = this.#reports[0] as { app: string; event: AppEvent };
        await this.#deps.events.record(next.app, next.event);
        // Only now: a failed try leaves it first in line.
        if (this.#reports[0] === next) this.#reports.shift();
      }
    } catch (error) {
      failure ??= error;
    }
    if (failure === undefined) {
      this.#delay = this.#options.retryMs;
      return;
    }
    this.#deps.log.warn({ err: failure, waiting: this.waiting }, 'writing departures failed: tried again');
    this.#delay = Math.min(this.#delay * 2, this.#options.retryMaxMs);
    this.#schedule();
  }

  /**
   * The count of each room members left, read once after all of them: newer than each departure, so
   * the pages' count ends right. A room whose read failed goes without one.
   */
  async #countsAfter(departures: readonly Departure[]): Promise<Map<string, MemberCount>> {
    const counts = new Map<string, MemberCount>();
    for (const departure of departures) {
      const key = `${departure.app}\u0000${departure.room}`;
      if (departure.type !== 'member.left' || counts.has(key)) continue;
      try {
        counts.set(key, await this.#deps.presence.memberCount(departure.app, departure.room));
      } catch (error) {
        this.#deps.log.error({ err: error, app: departure.app }, 'reading a presence room count failed');
      }
    }
    return counts;
  }
}
