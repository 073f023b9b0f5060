/**
 * What happens in an app that the customer's server hears of by webhook (section 6). The gateway
 * records events here; the webhook queue (webhooks/webhooks.ts) stores them and turns them into batches.
 */
export type AppEvent =
  | { type: 'emit'; room: string; event: string; data: unknown; from?: string; event_id: string }
  | { type: 'room.occupied' | 'room.vacated'; room: string }
  | { type: 'member.joined' | 'member.left'; room: string; user: string }
  | { type: 'user.online' | 'user.offline'; user: string };

export interface EventSink {
  /**
   * Records an event. Returns once it is stored: at once, or with a promise that settles then. A
   * failure rejects that promise (with a StoreError when the store failed) and never throws, so a
   * caller that does not wait loses only the event; the sink logs the failure.
   */
  record(app: string, event: AppEvent): Promise<void> | undefined;
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
}
