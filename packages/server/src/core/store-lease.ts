import type { Logger } from 'pino';
import type { MaybePromise } from '../engines/types.js';

/** How many lapsed records one sweep of calls, group calls or streams claims at most. */
export const SWEEP_BATCH = 100;

export interface StoreLeaseOptions {
  /** A node that has not renewed for this long is dead. */
  leaseMs: number;
  /** The longest wait between sweeps (a sweep also runs every tenth of a lease). */
  sweepMs: number;
  log: Logger;
  /** What the lease covers, for log lines ("calls"). */
  what: string;
  /** Keeps this node counted among the living for another lease (a store's `renew`). */
  renew(): MaybePromise<void>;
  /** Claims what lapsed (a store's `takeLapsed` or `sweep`) and reports it; may reject (logged). */
  sweep(): Promise<void>;
}

/**
 * This node's lease in one store (presence, calls, group calls, live streams), and the sweep any
 * node runs to claim what dead nodes left there. Renewed three times per lease, so one late renewal
 * does not make a node dead; one sweep at a time; failures are logged and the next timer tries again.
 */
export class StoreLease {
  readonly #options: StoreLeaseOptions;
  readonly #timers: NodeJS.Timeout[] = [];
  #sweeping = false;

  constructor(options: StoreLeaseOptions) {
    this.#options = options;
  }

  /** Takes the lease before any page here can use the store, then renews it and sweeps on timers. */
  async start(): Promise<void> {
    const { leaseMs, sweepMs } = this.#options;
    await this.#options.renew();
    const renew = setInterval(() => void this.#renew(), leaseMs / 3);
    const sweep = setInterval(() => void this.sweep(), Math.min(sweepMs, leaseMs / 10));
    renew.unref();
    sweep.unref();
    this.#timers.push(renew, sweep);
  }

  /** Claims and reports what lapsed now. Never throws. */
  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      await this.#options.sweep();
    } catch (error) {
      this.#options.log.error({ err: error }, `sweeping the ${this.#options.what} of dead nodes failed`);
    } finally {
      this.#sweeping = false;
    }
  }

  close(): void {
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
  }

  async #renew(): Promise<void> {
    try {
      await this.#options.renew();
    } catch (error) {
      this.#options.log.error({ err: error }, `renewing the ${this.#options.what} lease failed`);
    }
  }
}
