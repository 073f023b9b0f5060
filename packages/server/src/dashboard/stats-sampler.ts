/**
 * The dashboard's stats (docs/dashboard.md, "Stats"): one sample every interval into a ring of the
 * last 120, kept only while the dashboard is on. Rates are the differences of the service's own
 * counters (the ones /metrics exports) over the time between two samples.
 */
import type { Logger } from 'pino';
import type { MaybePromise, WebhookStats } from '../engines/types.js';
import type { Metrics } from '../metrics/metrics.js';
import type { StatsSample } from './stats-sample.js';

export type { StatsSample } from './stats-sample.js';

export const STATS_INTERVAL_MS = 5000;
/** Ten minutes of samples at the default interval. */
export const STATS_KEPT = 120;

/** Where each series is counted: this node only, or every node of the cluster. */
export const STATS_SCOPE = {
  pages: 'node',
  messagesIn: 'node',
  messagesOut: 'node',
  deliveries: 'node',
  webhookBacklog: 'cluster',
  webhookWaiting: 'cluster',
} as const;

/** What the sampler reads: three counters since the start, two values now. */
export interface StatsSources {
  pages(): number;
  messagesIn(): number;
  messagesOut(): number;
  deliveries(): MaybePromise<number>;
  webhooks(): MaybePromise<WebhookStats>;
}

/** The sources of a server, from its metrics (counted whether or not the dashboard is on). */
export function metricSources(
  metrics: Metrics,
  pages: () => number,
  webhooks: () => MaybePromise<WebhookStats>,
): StatsSources {
  return {
    pages,
    messagesIn() {
      // Keys are `target source`: the service's own events ($member.*) are not messages anybody sent.
      let sum = 0;
      for (const [key, count] of metrics.published) if (!key.endsWith(' service')) sum += count;
      return sum;
    },
    messagesOut: () => metrics.traffic.deliveries,
    async deliveries() {
      const { values } = await metrics.webhookTries.get();
      return values.reduce((sum, value) => sum + value.value, 0);
    },
    webhooks,
  };
}

interface Reading {
  /** Monotonic ms: rates divide by the time that passed, whatever the service's clock says. */
  mark: number;
  messagesIn: number;
  messagesOut: number;
  deliveries: number;
}

const perSecond = (delta: number, seconds: number) => Math.round((Math.max(0, delta) / seconds) * 100) / 100;

export class StatsSampler {
  readonly intervalMs: number;
  readonly node: string;
  readonly #sources: StatsSources;
  readonly #now: () => number;
  readonly #log: Logger;
  readonly #samples: StatsSample[] = [];
  #last: Reading | undefined;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(
    sources: StatsSources,
    options: { node: string; now: () => number; log: Logger; intervalMs?: number | undefined },
  ) {
    this.#sources = sources;
    this.#now = options.now;
    this.#log = options.log;
    this.node = options.node;
    this.intervalMs = Math.max(1, Math.floor(options.intervalMs ?? STATS_INTERVAL_MS));
  }

  /** Takes the counters' starting point now; the first sample follows one interval later. */
  start(): void {
    if (this.#timer) return;
    void this.#tick();
    this.#timer = setInterval(() => void this.#tick(), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** The samples kept, oldest first. */
  samples(): StatsSample[] {
    return [...this.#samples];
  }

  /** Never throws: a store that does not answer leaves the webhook values null in that sample. */
  async #tick(): Promise<void> {
    // A slow store read must not pile ticks up: the one that finds the last still running is skipped.
    if (this.#busy) return;
    this.#busy = true;
    try {
      const at = this.#now();
      const mark = performance.now();
      const pages = this.#sources.pages();
      const messagesIn = this.#sources.messagesIn();
      const messagesOut = this.#sources.messagesOut();
      const deliveries = await this.#sources.deliveries();
      let webhooks: WebhookStats | undefined;
      try {
        webhooks = await this.#sources.webhooks();
      } catch (error) {
        this.#log.warn({ err: error }, 'the dashboard stats could not read the webhook queue');
      }
      const last = this.#last;
      this.#last = { mark, messagesIn, messagesOut, deliveries };
      if (last === undefined) return;
      const seconds = Math.max(0.001, (mark - last.mark) / 1000);
      this.#samples.push({
        at,
        pages,
        messagesIn: perSecond(messagesIn - last.messagesIn, seconds),
        messagesOut: perSecond(messagesOut - last.messagesOut, seconds),
        deliveries: perSecond(deliveries - last.deliveries, seconds),
        webhookBacklog: webhooks ? (webhooks.batches.pending ?? 0) + (webhooks.batches.retrying ?? 0) : null,
        webhookWaiting: webhooks ? webhooks.waiting : null,
      });
      if (this.#samples.length > STATS_KEPT) this.#samples.shift();
    } catch (error) {
      this.#log.warn({ err: error }, 'taking a dashboard stats sample failed');
    } finally {
      this.#busy = false;
    }
  }
}
