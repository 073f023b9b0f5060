import type { Logger } from 'pino';
import type { MaybePromise } from '../engines/types.js';

export interface StoreLeaseOptions {
  /** A node that has not renewed for this long is dead. */
  leaseMs: number;
  /** The longest wait between sweeps (a sweep also runs every tenth of a lease). */
  sweepMs: number;
  log: Logger;
  /** What the lease covers, for log lines ("node"). */
  what: string;
  /** Keeps this node counted among the living for another lease (NodeStore's `renew`). */
  renew(): MaybePromise<void>;
  /** Claims what lapsed (the dead nodes) and reports it; may reject (logged). */
  sweep(): Promise<void>;
  /** The clock that times how long renewals have held after a failure. Default Date.now. */
  now?: () => number;
}

/**
 * The timing of this node's lease (NodeRegistry's, one for every feature), and the sweep any
 * node runs to claim what dead nodes left there. Renewed three times per lease, so one late renewal
 * does not make a node dead; one sweep at a time; failures are logged and the next timer tries again.
 *
 * After a store call failed (an outage: every node's lease may have run out meanwhile), the node
 * renews first, at the sweep's pace, and sweeps again only once its renewals have held for a whole
 * lease: by then every live node has renewed too, so no sweep takes the pages of nodes that only
 * waited for the store like this one.
 */
export class StoreLease {
  readonly #options: StoreLeaseOptions;
  readonly #now: () => number;
  readonly #timers: NodeJS.Timeout[] = [];
  #sweeping = false;
  #renewing = false;
  /** A store call failed and no renewal has succeeded since. */
  #unrenewed = false;
  /** When renewals began to hold again after a failure; undefined while steady. */
  #holdingSince: number | undefined;

  constructor(options: StoreLeaseOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** Takes the lease before any page here can use the store, then renews it and sweeps on timers. */
  async start(): Promise<void> {
    const { leaseMs, sweepMs } = this.#options;
    await this.#options.renew();
    const renew = setInterval(() => void this.#renew(), leaseMs / 3);
    const sweep = setInterval(() => void this.#tick(), Math.min(sweepMs, leaseMs / 10));
    renew.unref();
    sweep.unref();
    this.#timers.push(renew, sweep);
  }

  /** Claims and reports what lapsed now, unless the store failed lately (see above). Never throws. */
  async sweep(): Promise<void> {
    if (this.#sweeping || !this.#steady()) return;
    this.#sweeping = true;
    try {
      await this.#options.sweep();
    } catch (error) {
      this.#failed();
      this.#options.log.error({ err: error }, `sweeping the dead nodes of the ${this.#options.what} lease failed`);
    } finally {
      this.#sweeping = false;
    }
  }

  close(): void {
    for (const timer of this.#timers.splice(0)) clearInterval(timer);
  }

  /** The sweep timer: after a failure, a renewal first (sooner than the renewal timer would). */
  #tick(): Promise<void> {
    return this.#unrenewed ? this.#renew() : this.sweep();
  }

  #steady(): boolean {
    if (this.#unrenewed) return false;
    if (this.#holdingSince === undefined) return true;
    if (this.#now() - this.#holdingSince < this.#options.leaseMs) return false;
    this.#holdingSince = undefined;
    return true;
  }

  #failed(): void {
    this.#unrenewed = true;
    this.#holdingSince = undefined;
  }

  async #renew(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    try {
      await this.#options.renew();
      if (this.#unrenewed) {
        this.#unrenewed = false;
        this.#holdingSince = this.#now();
      }
    } catch (error) {
      this.#failed();
      this.#options.log.error({ err: error }, `renewing the ${this.#options.what} lease failed`);
    } finally {
      this.#renewing = false;
    }
  }
}
