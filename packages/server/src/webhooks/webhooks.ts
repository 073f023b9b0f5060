import { createHmac, hash, randomBytes } from 'node:crypto';
import { type DeliveryRecord, LIMITS } from '@realtime/protocol';
import type { Logger } from 'pino';
import { derivedKey } from '../apps/derived-keys.js';
import type { AppEvent, EventSink } from '../core/events.js';
import type { AppStore, StoredBatch, TryResult, WebhookStore } from '../engines/types.js';
import { requestPath } from './deliver.js';
import { DEFAULT_TIMINGS, nextTryAt, type WebhookTimings } from './retry-policy.js';

/** What sends one try: a POST of the exact body to the address, never following redirects. */
export interface Deliverer {
  deliver(url: string, body: string, headers: Record<string, string>): Promise<TryResult>;
  close(): Promise<void>;
}

export interface WebhooksDeps {
  store: WebhookStore;
  apps: AppStore;
  deliverer: Deliverer;
  log: Logger;
  now: () => number;
  timings?: Partial<WebhookTimings>;
}

/** Thrown by resend for the API to answer with. */
export class ResendRefused extends Error {
  readonly code: 'not_found' | 'not_resendable';
  constructor(code: 'not_found' | 'not_resendable', message: string) {
    super(message);
    this.code = code;
  }
}

function newId(prefix: string, now: number): string {
  return `${prefix}${now.toString(36)}${randomBytes(8).toString('hex')}`;
}

const MAX_TRIES_AT_ONCE = 16;
/** Tries at once for one app: one slow endpoint must not hold every other app's webhooks back. */
const MAX_TRIES_PER_APP = 4;
const PRUNE_EVERY_MS = 60_000;

/**
 * Webhook delivery: event -> store (durable, before anything acknowledges it) -> batcher (about one
 * second of an app's events, at most 100 in order) -> dispatcher (due batches, signed POST, retry
 * schedule). Everything it needs to go on after a restart is in the store.
 */
export class Webhooks implements EventSink {
  readonly #deps: WebhooksDeps;
  readonly #timings: WebhookTimings;
  /** Apps with a batch window open: the timer that closes it. */
  readonly #windows = new Map<string, NodeJS.Timeout>();
  /** Events added per app since its window opened (an estimate to close a full window early). */
  readonly #counts = new Map<string, number>();
  readonly #inFlight = new Map<string, Promise<TryResult>>();
  readonly #perApp = new Map<string, number>();
  #poll: NodeJS.Timeout | undefined;
  #prune: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: WebhooksDeps) {
    this.#deps = deps;
    this.#timings = { ...DEFAULT_TIMINGS, ...deps.timings };
  }

  get timings(): WebhookTimings {
    return this.#timings;
  }

  /** Picks up what a previous run left: events waiting for a batch, batches due. */
  async start(): Promise<void> {
    for (const app of (await this.#deps.store.waiting()).keys()) this.#openWindow(app);
    const every = Math.max(20, Math.min(250, this.#timings.windowMs / 4));
    this.#poll = setInterval(() => void this.#dispatch(), every);
    this.#poll.unref();
    this.#prune = setInterval(() => void this.#pruneOld(), PRUNE_EVERY_MS);
    this.#prune.unref();
    void this.#dispatch();
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
          app.then((found) => (found ? this.#add(found.key, found.webhook, found.features, event) : undefined)),
          appKey,
        );
      }
      const added = app ? this.#add(app.key, app.webhook, app.features, event) : undefined;
      return added && this.#logged(added, appKey);
    } catch (error) {
      return this.#logged(Promise.reject(error), appKey);
    }
  }

  /** Stores the event; throws (or rejects) when the store fails. */
  #add(app: string, webhook: string, features: readonly string[], event: AppEvent): Promise<void> | undefined {
    if (webhook === '' || !features.includes('webhooks')) return undefined;
    const now = this.#deps.now();
    const json = JSON.stringify({ id: newId('ev_', now), at: now, ...event });
    const added = this.#deps.store.addEvent(app, json);
    if (added instanceof Promise) return added.then(() => this.#counted(app));
    this.#counted(app);
    return undefined;
  }

  /** Logs a failure; the promise keeps its rejection for a caller that waits, and no other is unhandled. */
  #logged(recorded: Promise<void>, app: string): Promise<void> {
    recorded.catch((error: unknown) => this.#deps.log.error({ err: error, app }, 'recording a webhook event failed'));
    return recorded;
  }

  #counted(app: string): void {
    const count = (this.#counts.get(app) ?? 0) + 1;
    this.#counts.set(app, count);
    // Later: the event may be part of a write unit still being written; forming the batch waits for it.
    if (count >= this.#timings.maxEvents) queueMicrotask(() => void this.#closeWindow(app));
    else this.#openWindow(app);
  }

  #openWindow(app: string): void {
    if (this.#windows.has(app) || this.#closed) return;
    const timer = setTimeout(() => void this.#closeWindow(app), this.#timings.windowMs);
    this.#windows.set(app, timer);
  }

  /** Forms the app's batches from everything waiting, in order, then sends what is due. */
  async #closeWindow(app: string): Promise<void> {
    clearTimeout(this.#windows.get(app));
    this.#windows.delete(app);
    this.#counts.delete(app);
    try {
      const now = this.#deps.now();
      for (;;) {
        const batch = await this.#deps.store.formBatch(app, newId('b_', now), this.#timings.maxEvents, now);
        if (!batch) break;
      }
    } catch (error) {
      this.#deps.log.error({ err: error, app }, 'forming webhook batches failed');
      this.#openWindow(app);
    }
    await this.#dispatch();
  }

  async #dispatch(): Promise<void> {
    if (this.#closed) return;
    const room = MAX_TRIES_AT_ONCE - this.#inFlight.size;
    if (room <= 0) return;
    let due: StoredBatch[];
    try {
      // Read past the busy ones: batches of apps at their limit are skipped, not waited on.
      due = await this.#deps.store.due(this.#deps.now(), room + this.#inFlight.size + 64);
    } catch (error) {
      this.#deps.log.error({ err: error }, 'reading due webhook batches failed');
      return;
    }
    const now = this.#deps.now();
    for (const batch of due) {
      if (this.#inFlight.has(batch.id) || this.#inFlight.size >= MAX_TRIES_AT_ONCE) continue;
      if ((this.#perApp.get(batch.app) ?? 0) >= MAX_TRIES_PER_APP) continue;
      if (batch.firstTryAt !== null && now - batch.firstTryAt >= this.#timings.giveUpMs) {
        // Overdue past the 24 hours (the service was down, or behind): given up without a try.
        try {
          await this.#deps.store.saveTry({ ...batch, state: 'given_up', nextAt: null, doneAt: now });
        } catch (error) {
          // Still due: the next poll gives it up once the store takes writes again.
          this.#deps.log.error({ err: error, batch: batch.id }, 'giving up an overdue webhook batch failed');
        }
        continue;
      }
      void this.#try(batch, 'scheduled');
    }
  }

  /** One try: sign afresh, POST the stored body, record the result and what comes next. */
  #try(batch: StoredBatch, kind: 'scheduled' | 'resend'): Promise<TryResult> {
    const running = (async (): Promise<TryResult> => {
      const result = await this.#send(batch);
      const now = this.#deps.now();
      const taken = result.status >= 200 && result.status < 300;
      const next: StoredBatch = { ...batch, attempts: batch.attempts + 1, status: result.status };
      next.error = result.error ?? null;
      next.at = now;
      next.firstTryAt = batch.firstTryAt ?? now;
      if (taken) {
        next.state = 'taken';
        next.nextAt = null;
        next.doneAt = now;
      } else if (kind === 'scheduled') {
        next.failed = batch.failed + 1;
        const at = nextTryAt(this.#timings, next.failed, next.firstTryAt, now);
        next.state = at === null ? 'given_up' : 'retrying';
        next.nextAt = at;
        next.doneAt = at === null ? now : null;
      }
      // A failed resend leaves the batch on its schedule (a given-up batch stays given up).
      await this.#deps.store.saveTry(next);
      if (!taken) {
        this.#deps.log.warn(
          { batch: batch.id, app: batch.app, status: result.status, error: result.error, next_at: next.nextAt },
          'webhook try failed',
        );
      }
      return result;
    })();
    this.#inFlight.set(batch.id, running);
    this.#perApp.set(batch.app, (this.#perApp.get(batch.app) ?? 0) + 1);
    const done = () => {
      this.#inFlight.delete(batch.id);
      const left = (this.#perApp.get(batch.app) ?? 1) - 1;
      if (left > 0) this.#perApp.set(batch.app, left);
      else this.#perApp.delete(batch.app);
    };
    running.then(done, (error: unknown) => {
      done();
      this.#deps.log.error({ err: error, batch: batch.id }, 'webhook try failed to run');
    });
    return running;
  }

  async #send(batch: StoredBatch): Promise<TryResult> {
    const app = await this.#deps.apps.get(batch.app);
    if (!app || app.webhook === '') return { status: 0, error: 'unreachable' };
    let url: URL;
    try {
      url = new URL(app.webhook);
    } catch {
      return { status: 0, error: 'unreachable' };
    }
    const path = requestPath(url);
    const timestamp = String(Math.floor(this.#deps.now() / 1000));
    const bodyHash = hash('sha256', batch.body, 'hex');
    const signature = createHmac('sha256', derivedKey(app.secret, 'webhook'))
      .update(`${timestamp}\nPOST\n${path}\n${bodyHash}`)
      .digest('hex');
    return this.#deps.deliverer.deliver(url.href, batch.body, {
      'X-Service-Site': app.key,
      'X-Service-Timestamp': timestamp,
      'X-Service-Signature': signature,
      'X-Service-Batch': batch.id,
    });
  }

  /** POST /webhooks/test: a batch of one `webhook.test` event, stored and tried at once. */
  async test(app: string): Promise<{ delivered: boolean; status: number }> {
    const now = this.#deps.now();
    const event = JSON.stringify({ id: newId('ev_', now), at: now, type: 'webhook.test' });
    const batch = await this.#deps.store.addBatch(app, newId('b_', now), [event], now);
    const result = await this.#try(batch, 'scheduled');
    return { delivered: result.status >= 200 && result.status < 300, status: result.status };
  }

  /** POST /webhooks/{id}/resend: one immediate try of the same body, same event ids. */
  async resend(app: string, id: string): Promise<{ delivered: boolean; status: number }> {
    const batch = await this.#deps.store.get(id);
    if (!batch || batch.app !== app) throw new ResendRefused('not_found', 'no webhook batch of this app has that id');
    if (this.#inFlight.has(batch.id)) {
      throw new ResendRefused('not_resendable', 'a try of this batch is under way');
    }
    if (!this.resendable(batch, this.#deps.now())) {
      throw new ResendRefused(
        'not_resendable',
        batch.state === 'taken' ? 'the batch was taken' : 'the batch is past its resend window',
      );
    }
    const result = await this.#try(batch, 'resend');
    return { delivered: result.status >= 200 && result.status < 300, status: result.status };
  }

  resendable(batch: StoredBatch, now: number): boolean {
    if (batch.state === 'taken' || this.#inFlight.has(batch.id)) return false;
    if (batch.doneAt === null) return true;
    return now - batch.doneAt <= this.#timings.resendWindowMs;
  }

  /** GET /webhooks: the last 100 batches, newest first. */
  async list(app: string): Promise<DeliveryRecord[]> {
    const now = this.#deps.now();
    const batches = await this.#deps.store.list(app, LIMITS.webhookDeliveriesListed);
    return batches.map((batch) => {
      const record: DeliveryRecord = {
        id: batch.id,
        state: batch.state,
        status: batch.status,
        events: batch.events,
        attempts: batch.attempts,
        at: batch.at,
        next_at: batch.nextAt,
        resendable: this.resendable(batch, now),
      };
      if (batch.error) record.error = batch.error;
      return record;
    });
  }

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
    clearInterval(this.#poll);
    clearInterval(this.#prune);
    for (const timer of this.#windows.values()) clearTimeout(timer);
    this.#windows.clear();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#inFlight.values()]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, this.#timings.answerMs + 1000);
      }),
    ]);
    clearTimeout(timer);
    await this.#deps.deliverer.close();
  }
}
