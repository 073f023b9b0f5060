import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The service's Prometheus metrics, one registry per server (tests run several in one process).
 * Labels are bounded sets (route names, status codes, states): never a room, user or app name,
 * whose number a client decides.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly rateLimited: Counter<'scope'>;
  readonly askSeconds = new Histogram({
    name: 'realtime_ask_duration_seconds',
    help: 'Time from an ask request to its answer (a reply, every reply with all, or the timeout).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly historyAppends = new Counter({
    name: 'realtime_history_appends_total',
    help: 'Events written to room history, by result (ok, or failed: the write was refused by the store).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly idempotentEmits = new Counter({
    name: 'realtime_idempotency_reserves_total',
    help: 'Looks at the Idempotency-Key of an emit or batch, by what was found: reserved (first use), answered (a retry given the stored answer), conflict, in_flight (a duplicate looks again every 50 ms while it waits).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly historyAppendSeconds = new Histogram({
    name: 'realtime_history_append_duration_seconds',
    help: "Time to write an event to room history (its statements, inside the turn's group transaction).",
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [this.registry],
  });
  readonly webhookTries = new Counter({
    name: 'realtime_webhook_tries_total',
    help: 'Webhook batch tries, by HTTP status (0 when nothing answered) and error (none, timeout, unreachable, not_public).',
    labelNames: ['status', 'error'] as const,
    registers: [this.registry],
  });
  /** Per-frame counts stay plain numbers on the hot path; the registry reads them when scraped. */
  readonly traffic = { deliveries: 0, bytesOut: 0, slowConsumerCloses: 0, framesRateLimited: 0 };
  /** Publications by `target source`, and API answers by `route status`: plain counts, labelled when scraped. */
  readonly published = new Map<string, number>();
  readonly #answers = new Map<string, number>();

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    const traffic = this.traffic;
    const answers = this.#answers;
    new Counter({
      name: 'realtime_api_requests_total',
      help: 'HTTP API requests answered, by route and status.',
      labelNames: ['route', 'status'] as const,
      registers,
      collect() {
        this.reset();
        for (const [key, count] of answers) {
          const [route = '', status = ''] = key.split(' ');
          this.labels(route, status).inc(count);
        }
      },
    });
    const published = this.published;
    new Counter({
      name: 'realtime_emits_total',
      help: 'Events published to rooms or users, by target (room, user) and source (api, page, service).',
      labelNames: ['target', 'source'] as const,
      registers,
      collect() {
        this.reset();
        for (const [key, count] of published) {
          const [target = '', source = ''] = key.split(' ');
          this.labels(target, source).inc(count);
        }
      },
    });
    // api and asks are counted as they happen; frames, on the hot path, is read from traffic when scraped.
    let framesCounted = 0;
    this.rateLimited = new Counter({
      name: 'realtime_rate_limited_total',
      help: 'Refusals for going over a limit: api (app request rate), asks (asks in flight per user), frames (page frame rate).',
      labelNames: ['scope'] as const,
      registers,
      collect() {
        this.labels('frames').inc(traffic.framesRateLimited - framesCounted);
        framesCounted = traffic.framesRateLimited;
      },
    });
    new Gauge({
      name: 'realtime_pages_open',
      help: 'Open page sockets on this node (greeting or open).',
      registers,
      collect() {
        this.set(sources.pages());
      },
    });
    new Gauge({
      name: 'realtime_rooms_joined',
      help: 'Rooms with at least one page on this node.',
      registers,
      collect() {
        this.set(sources.rooms());
      },
    });
    new Counter({
      name: 'realtime_deliveries_total',
      help: 'Frames handed to page sockets (events, replies, asks, control frames).',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.deliveries);
      },
    });
    new Counter({
      name: 'realtime_bytes_out_total',
      help: 'Bytes of WebSocket frames handed to page sockets.',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.bytesOut);
      },
    });
    new Counter({
      name: 'realtime_slow_consumer_closes_total',
      help: 'Pages closed with 4200 because they did not read fast enough.',
      registers,
      collect() {
        this.reset();
        this.inc(traffic.slowConsumerCloses);
      },
    });
    const waiting = new Gauge({
      name: 'realtime_webhook_events_waiting',
      help: 'Webhook events stored and not yet in a batch.',
      registers,
    });
    const oldest = new Gauge({
      name: 'realtime_webhook_oldest_waiting_seconds',
      help: 'Age of the oldest webhook event not yet taken (waiting for a batch, or in a batch not yet delivered); 0 when none.',
      registers,
    });
    new Gauge({
      name: 'realtime_webhook_batches',
      help: 'Stored webhook batches by state (pending, retrying, taken, given_up).',
      labelNames: ['state'] as const,
      registers,
      // One store read per scrape sets all three webhook gauges.
      async collect() {
        const stats = await sources.webhooks();
        waiting.set(stats.waiting);
        oldest.set(stats.oldestWaitingMs / 1000);
        for (const state of ['pending', 'retrying', 'taken', 'given_up'] as const) {
          this.set({ state }, stats.batches[state] ?? 0);
        }
      },
    });
  }

  /** An API answer: counted by route and status; a 429 is a refusal; an answered ask is timed. */
  answered(route: string, status: number, startedMs: number, overAppRate: boolean): void {
    const key = `${route} ${status}`;
    this.#answers.set(key, (this.#answers.get(key) ?? 0) + 1);
    if (status === 429) this.rateLimited.labels(overAppRate ? 'api' : 'asks').inc();
    if (route === 'ask' && status === 200) this.askSeconds.observe((performance.now() - startedMs) / 1000);
  }

  /** The text a Prometheus scrape gets: the process's own metrics, then this server's. */
  async render(): Promise<{ contentType: string; body: string }> {
    const own = processMetrics();
    return {
      contentType: this.registry.contentType,
      body: `${await own.metrics()}\n${await this.registry.metrics()}`,
    };
  }
}

let processRegistry: Registry | undefined;

/**
 * Node's own metrics (CPU, memory, event loop lag, GC), collected once per process: prom-client
 * keeps what it watches them with (a GC observer, a loop-delay timer) for the life of the process,
 * so collected per server they kept every closed server's registry, and through it the server.
 */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 20 });
  }
  return processRegistry;
}

export interface WebhookQueueStats {
  waiting: number;
  /** Age of the oldest event not yet delivered, in ms; 0 when none. */
  oldestWaitingMs: number;
  batches: Partial<Record<'pending' | 'retrying' | 'taken' | 'given_up', number>>;
}

/** What the metrics read when scraped. */
export interface MetricSources {
  pages(): number;
  rooms(): number;
  webhooks(): Promise<WebhookQueueStats> | WebhookQueueStats;
}
