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
  /**
   * The node found its lease taken: it did not renew in time (paused, a stalled event loop, Redis
   * that lost its data) and its pages were taken out. Its pages must go and come back to count again.
   */
  lapsed?: () => void;
}

/**
 * Keeps this node counted among the living, and reports what the pages of dead nodes ended: a node
 * killed without closing its pages has them taken out within a lease and a sweep (at most 17 s),
 * and each `member.left` and `room.vacated` is reported once, by the node whose sweep claimed it.
 * A node that comes back after its pages were taken out (SIGSTOP past its lease) learns it from its
 * next renewal, and says so (`lapsed`) once per lapse.
 */
export class NodeLease {
  readonly #lease: StoreLease;
  /** The first renewal took the lease: only later ones can find it lapsed. */
  #held = false;

  constructor(deps: NodeLeaseDeps) {
    const leaseMs = deps.leaseMs ?? NODE_LEASE_MS;
    this.#lease = new StoreLease({
      leaseMs,
      sweepMs: 2000,
      log: deps.log,
      what: 'presence',
      now: deps.now,
      renew: async () => {
        const held = await deps.presence.renew(deps.node, deps.now(), leaseMs);
        if (!held && this.#held) {
          deps.log.warn('this node lost its lease (it did not renew in time): its pages reconnect to count again');
          deps.lapsed?.();
        }
        this.#held = true;
      },
      sweep: async () => {
        await deps.departures.report(await deps.presence.sweep(deps.now(), deps.node));
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
