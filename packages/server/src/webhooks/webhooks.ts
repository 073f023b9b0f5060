import { type DeliveryRecord, LIMITS } from '@realtime/protocol';
import type { Logger } from 'pino';
import type { AppEvent, EventSink, SendEvent } from '../core/events.js';
import type { App, AppStore, Report, StoredBatch, TryMinute, WebhookStats, WebhookStore } from '../engines/types.js';
import { Batcher } from './batcher.js';
import type { Deliverer } from './deliver.js';
import { Dispatcher, type TryAnswer, type TryReport } from './dispatcher.js';
import { eventJson, reportText } from './event-json.js';
import { DEFAULT_TIMINGS, isResendable, type WebhookTimings } from './retry-policy.js';

export type { Deliverer } from './deliver.js';
export { ResendRefused, type TryAnswer, type TryReport } from './dispatcher.js';

export interface WebhooksDeps {
  store: WebhookStore;
  apps: AppStore;
  deliverer: Deliverer;
  log: Logger;
  now: () => number;
  /** This node among the nodes sharing the store: the holder of the batches it tries. */
  node: string;
  timings?: Partial<WebhookTimings>;
}

const PRUNE_EVERY_MS = 60_000;

/** The API's answer to a try: exactly delivered and status. */
const apiAnswer = ({ delivered, status }: TryReport): TryAnswer => ({ delivered, status });

/** Whether the app's events go to a webhook: it has an address and its plan includes webhooks. */
const hooked = (app: App) => app.webhook !== '' && app.features.includes('webhooks');

/**
 * Webhook delivery: event -> store (durable, before anything acknowledges it) -> batcher (about one
 * window of an app's events, at most 100 in order) -> dispatcher (due batches leased to this node,
 * signed POST, retry schedule). Everything needed to go on after a restart, or on another node, is
 * in the store.
 */
export class Webhooks implements EventSink {
  readonly #deps: WebhooksDeps;
  readonly #timings: WebhookTimings;
  readonly #batcher: Batcher;
  readonly #dispatcher: Dispatcher;
  #prune: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: WebhooksDeps) {
    this.#deps = deps;
    this.#timings = { ...DEFAULT_TIMINGS, ...deps.timings };
    const { store, apps, deliverer, log, now, node } = deps;
    this.#dispatcher = new Dispatcher({
      store,
      apps,
      deliverer,
      log,
      now,
      node,
      timings: this.#timings,
    });
    this.#batcher = new Batcher({ store, log, now, timings: this.#timings, formed: () => this.#dispatcher.dispatch() });
  }

  get timings(): WebhookTimings {
    return this.#timings;
  }

  /** Picks up what is in the store: events waiting for a batch, batches due. */
  async start(): Promise<void> {
    await this.#batcher.start();
    this.#dispatcher.start();
    this.#prune = setInterval(() => void this.#pruneOld(), PRUNE_EVERY_MS);
    this.#prune.unref();
  }

  /**
   * Records an event for the app's webhook, when the app has one and its plan includes webhooks.
   * Returns once the event is stored (with a promise when the app or the store is asynchronous).
   * A failure is logged and rejects that promise; it never throws, so callers that do not wait
   * lose only the event.
   */
  record(appKey: string, event: AppEvent): Promise<void> | undefined {
    if (this.#closed) return undefined;
    try {
      const app = this.#deps.apps.get(appKey);
      if (app instanceof Promise) {
        return this.#logged(
          app.then((found) => (found ? this.#add(found, event) : undefined)),
          appKey,
        );
      }
      const added = app ? this.#add(app, event) : undefined;
      return added && this.#logged(added, appKey);
    } catch (error) {
      return this.#logged(Promise.reject(error), appKey);
    }
  }

  /** Stores the event; throws (or rejects) when the store fails. */
  #add(app: App, event: AppEvent): Promise<void> | undefined {
    if (!hooked(app)) return undefined;
    const added = this.#deps.store.addEvent(app.key, eventJson(event, this.#deps.now()));
    if (added instanceof Promise) return added.then(() => this.#batcher.counted(app.key));
    this.#batcher.counted(app.key);
    return undefined;
  }

  /** Logs a failure; the promise keeps its rejection for a caller that waits, and no other is unhandled. */
  #logged(recorded: Promise<void>, app: string): Promise<void> {
    recorded.catch((error: unknown) => this.#deps.log.error({ err: error, app }, 'recording a webhook event failed'));
    return recorded;
  }

  /** A page send's `emit` event, cut where its id goes, for the broker to store with the send. */
  reportOf(app: App, event: SendEvent): Report | undefined {
    if (this.#closed || !hooked(app)) return undefined;
    return reportText(event, this.#deps.now());
  }

  /** The broker stored a send's report: it goes out with the app's window. */
  reported(app: string, _event: Extract<AppEvent, { type: 'emit' }>): void {
    this.#batcher.counted(app);
  }

  /** POST /webhooks/test: a `webhook.test` event, stored and tried at once. */
  async test(app: string): Promise<TryAnswer> {
    return apiAnswer(await this.#dispatcher.test(app));
  }

  /** POST /webhooks/{id}/resend: one immediate try of the same body. Throws ResendRefused. */
  async resend(app: string, id: string): Promise<TryAnswer> {
    return apiAnswer(await this.#dispatcher.resend(app, id));
  }

  /** test, with why nothing answered (the dashboard shows it; the API's answer has no such field). */
  testReport(app: string): Promise<TryReport> {
    return this.#dispatcher.test(app);
  }

  /** resend, with why nothing answered. Throws ResendRefused. */
  resendReport(app: string, id: string): Promise<TryReport> {
    return this.#dispatcher.resend(app, id);
  }

  /** One batch of the app as listed, with the body its tries send; undefined for another app's or an unknown id. */
  async delivery(app: string, id: string): Promise<{ delivery: DeliveryRecord; body: string } | undefined> {
    const batch = await this.#deps.store.get(id);
    if (batch?.app !== app) return undefined;
    return { delivery: this.#record(batch, this.#deps.now()), body: batch.body };
  }

  /** The app's tries per minute by outcome since `sinceMs` (kept a day). */
  async tryCounts(app: string, sinceMs: number): Promise<TryMinute[]> {
    return await this.#deps.store.tryCounts(app, sinceMs, this.#deps.now());
  }

  /** GET /webhooks: the last 100 batches, newest first. */
  async list(app: string): Promise<DeliveryRecord[]> {
    const now = this.#deps.now();
    const batches = await this.#deps.store.list(app, LIMITS.webhookDeliveriesListed);
    return batches.map((batch) => this.#record(batch, now));
  }

  #record(batch: StoredBatch, now: number): DeliveryRecord {
    const record: DeliveryRecord = {
      id: batch.id,
      state: batch.state,
      status: batch.status,
      events: batch.events,
      attempts: batch.attempts,
      at: batch.at,
      next_at: batch.nextAt,
      // A try under way on another node is not seen here: its resend answers not_resendable.
      resendable: isResendable(this.#timings, batch, now) && !this.#dispatcher.underWay(batch.id),
    };
    if (batch.error) record.error = batch.error;
    return record;
  }

  /** What the queue holds, for metrics. */
  async stats(): Promise<WebhookStats> {
    return await this.#deps.store.stats(this.#deps.now());
  }

  /** Never rejects: a failure is logged and the next round tries again. */
  async #pruneOld(): Promise<void> {
    try {
      await this.#deps.store.prune(this.#deps.now() - this.#timings.resendWindowMs);
    } catch (error) {
      this.#deps.log.error({ err: error }, 'pruning webhook batches failed');
    }
  }

  /** Stops forming and sending; waits (bounded) for tries under way. Waiting events stay stored. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#prune);
    await this.#batcher.close();
    await this.#dispatcher.close();
    await this.#deps.deliverer.close();
  }
}
