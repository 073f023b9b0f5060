import type { Logger } from 'pino';
import type { WebhookStore } from '../engines/types.js';
import { newId } from './event-json.js';
import type { WebhookTimings } from './retry-policy.js';

export interface BatcherDeps {
  store: WebhookStore;
  log: Logger;
  now: () => number;
  timings: WebhookTimings;
  /** Batches were formed: the dispatcher may send them now rather than at its next poll. */
  formed: () => void;
}

/** Windows this many times the batch window apart, the batcher looks for events nobody batches. */
const SWEEP_WINDOWS = 10;
const MIN_SWEEP_MS = 1000;

/**
 * Turns an app's stored events into batches: about one window of them (at most `maxEvents`, in
 * order) per batch. Each node forms batches for the windows it opened, from the events it counted;
 * `formBatch` is atomic, so when nodes' windows overlap an event still goes into one batch. Events
 * nobody counts (a node died with its windows open, a restart) are found by a sweep of the store.
 */
export class Batcher {
  readonly #deps: BatcherDeps;
  /** Apps with a window open: the timer that closes it. */
  readonly #windows = new Map<string, NodeJS.Timeout>();
  /** Events counted per app since its window opened (to close a full window early). */
  readonly #counts = new Map<string, number>();
  /** Windows being closed (forming batches): close() waits for them. */
  readonly #closing = new Set<Promise<void>>();
  #sweep: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(deps: BatcherDeps) {
    this.#deps = deps;
  }

  /** Opens a window for every app with events waiting, now and every few windows after. */
  async start(): Promise<void> {
    await this.#sweepWaiting();
    const every = Math.max(MIN_SWEEP_MS, this.#deps.timings.windowMs * SWEEP_WINDOWS);
    this.#sweep = setInterval(() => void this.#sweepWaiting(), every);
    this.#sweep.unref();
  }

  /** An event of the app was stored: it goes out with the app's window (opened now if none is). */
  counted(app: string): void {
    if (this.#closed) return;
    const count = (this.#counts.get(app) ?? 0) + 1;
    this.#counts.set(app, count);
    // Later, not now: the event may be part of a write unit still being written.
    if (count >= this.#deps.timings.maxEvents) queueMicrotask(() => this.#close(app));
    else this.#open(app);
  }

  /** Never rejects: a failed read is logged and the next sweep tries again. */
  async #sweepWaiting(): Promise<void> {
    if (this.#closed) return;
    try {
      for (const app of (await this.#deps.store.waiting()).keys()) this.#open(app);
    } catch (error) {
      this.#deps.log.error({ err: error }, 'reading waiting webhook events failed');
    }
  }

  #open(app: string): void {
    if (this.#windows.has(app) || this.#closed) return;
    this.#windows.set(
      app,
      setTimeout(() => this.#close(app), this.#deps.timings.windowMs),
    );
  }

  #close(app: string): void {
    clearTimeout(this.#windows.get(app));
    this.#windows.delete(app);
    const counted = this.#counts.get(app) ?? 0;
    this.#counts.delete(app);
    if (this.#closed) return;
    // The window's events: as many full batches as it counted (all that waits when it counted none:
    // a window opened by the sweep, for events nobody counted).
    const batches = counted > 0 ? Math.ceil(counted / this.#deps.timings.maxEvents) : Number.POSITIVE_INFINITY;
    const forming = this.#form(app, batches);
    this.#closing.add(forming);
    void forming.finally(() => this.#closing.delete(forming));
  }

  /** Forms up to `batches` of the app's batches from what waits, in order. Never rejects. */
  async #form(app: string, batches: number): Promise<void> {
    let made = 0;
    try {
      const { store, timings } = this.#deps;
      while (made < batches) {
        const now = this.#deps.now();
        const batch = await store.formBatch(app, newId('b_', now), timings.maxEvents, now);
        if (!batch) break;
        made += 1;
        // A batch short of full emptied the queue: events stored since belong to the next window
        // (with a networked store they keep coming while this loops, one per round trip).
        if (batch.events < timings.maxEvents) break;
      }
      // Events left waiting (counted by another node, or stored meanwhile) go with the next window.
      if (made >= batches && Number.isFinite(batches)) {
        const waiting = (await store.waiting()).get(app) ?? 0;
        if (waiting > 0) this.#open(app);
      }
    } catch (error) {
      this.#deps.log.error({ err: error, app }, 'forming webhook batches failed');
      // The events stay stored: another window tries again.
      this.#open(app);
    }
    if (made > 0) this.#deps.formed();
  }

  /** Closes no more windows; waits for batches being formed. Waiting events stay stored. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    for (const timer of this.#windows.values()) clearTimeout(timer);
    this.#windows.clear();
    this.#counts.clear();
    await Promise.all(this.#closing);
  }
}
