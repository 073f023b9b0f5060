import type { AppEvent } from '@realtime/protocol';
import type { App, Report } from '../engines/types.js';

/**
 * What happens in an app that the customer's server hears of by webhook (section 6). The gateway
 * records events here; the webhook queue (webhooks/webhooks.ts) stores them and turns them into batches.
 */
export type { AppEvent } from '@realtime/protocol';

/** A page send's `emit` event before the send has its id. */
export type SendEvent = Omit<Extract<AppEvent, { type: 'emit' }>, 'event_id'>;

export interface EventSink {
  /**
   * Records an event. Returns once it is stored: at once, or with a promise that settles then. A
   * failure rejects that promise (with a StoreError when the store failed) and never throws; callers
   * wait for it and handle the failure.
   */
  record(app: string, event: AppEvent): Promise<void> | undefined;
  /**
   * The stored text of a page send's `emit` event, cut where the send's id goes, for the broker to
   * store in the same step as the send (Outgoing.report); undefined when the app gets no webhooks.
   */
  reportOf(app: App, event: SendEvent): Report | undefined;
  /** The broker stored the report of this send (it has its id now): the batcher counts it. */
  reported(app: string, event: Extract<AppEvent, { type: 'emit' }>): void;
}

/** Keeps the newest events in memory: for tests and embedders that want to watch what is recorded. */
export class MemoryEventSink implements EventSink {
  readonly events: { app: string; at: number; event: AppEvent }[] = [];
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: { max?: number; now?: () => number } = {}) {
    this.#max = options.max ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  record(app: string, event: AppEvent): undefined {
    if (this.events.length >= this.#max) this.events.shift();
    this.events.push({ app, at: this.#now(), event });
    return undefined;
  }

  /** Reports are stored by the webhook queue; this sink sees page sends once they have their id. */
  reportOf(): undefined {
    return undefined;
  }

  reported(app: string, event: Extract<AppEvent, { type: 'emit' }>): void {
    this.record(app, event);
  }
}
