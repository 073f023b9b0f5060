import type { Logger } from 'pino';
import type { PresenceStore } from '../engines/types.js';
import type { Departures } from './departures.js';
import { StoreLease } from './store-lease.js';

/** A node that has not renewed for this long is dead: its pages are swept by the others. */
export const NODE_LEASE_MS = 15_000;

export interface NodeLeaseDeps {
  node: string;
  presence: PresenceStore;
  /** Reports what the sweeps ended (webhook events tried until stored, `$member.left` to the rooms). */
  departures: Pick<Departures, 'report'>;
  log: Logger;
  now: () => number;
  /** Default NODE_LEASE_MS; renewed three times per lease, swept every tenth of it (at most 2 s). */
  leaseMs?: number;
}

/**
 * Keeps this node counted among the living, and reports what the pages of dead nodes ended: a node
 * killed without closing its pages has them taken out within a lease and a sweep (at most 17 s),
 * and each `member.left` and `room.vacated` is reported once, by the node whose sweep claimed it.
 */
export class NodeLease {
  readonly #lease: StoreLease;

  constructor(deps: NodeLeaseDeps) {
    const leaseMs = deps.leaseMs ?? NODE_LEASE_MS;
    this.#lease = new StoreLease({
      leaseMs,
      sweepMs: 2000,
      log: deps.log,
      what: 'presence',
      renew: () => deps.presence.renew(deps.node, deps.now(), leaseMs),
      sweep: async () => {
        await deps.departures.report(await deps.presence.sweep(deps.now()));
      },
    });
  }

  /** Takes the lease before the node serves a page, then renews and sweeps on timers. */
  start(): Promise<void> {
    return this.#lease.start();
  }

  /** Sweeps the pages of dead nodes and reports their departures. Never throws. */
  sweep(): Promise<void> {
    return this.#lease.sweep();
  }

  close(): void {
    this.#lease.close();
  }
}
