import type { Logger } from 'pino';
import type { Broker, Departure, MemberCount, PresenceStore } from '../engines/types.js';
import type { EventSink } from './events.js';
import { memberChangeData } from './member-windows.js';
import { StoreLease } from './store-lease.js';

/** A node that has not renewed for this long is dead: its pages are swept by the others. */
export const NODE_LEASE_MS = 15_000;

export interface NodeLeaseDeps {
  node: string;
  presence: PresenceStore;
  broker: Broker;
  events: EventSink;
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
  readonly #deps: NodeLeaseDeps;
  readonly #lease: StoreLease;

  constructor(deps: NodeLeaseDeps) {
    this.#deps = deps;
    const leaseMs = deps.leaseMs ?? NODE_LEASE_MS;
    this.#lease = new StoreLease({
      leaseMs,
      sweepMs: 2000,
      log: deps.log,
      what: 'presence',
      renew: () => deps.presence.renew(deps.node, deps.now(), leaseMs),
      sweep: async () => {
        const departures = await deps.presence.sweep(deps.now());
        const counts = await this.#countsAfter(departures);
        for (const departure of departures) await this.#report(departure, counts);
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

  /**
   * The count of each room members left, read once after the whole sweep: newer than each of its
   * departures, so the pages' count ends right. A room whose read failed goes without one.
   */
  async #countsAfter(departures: readonly Departure[]): Promise<Map<string, MemberCount>> {
    const counts = new Map<string, MemberCount>();
    for (const departure of departures) {
      const key = `${departure.app}\u0000${departure.room}`;
      if (departure.type !== 'member.left' || counts.has(key)) continue;
      try {
        counts.set(key, await this.#deps.presence.memberCount(departure.app, departure.room));
      } catch (error) {
        this.#deps.log.error({ err: error, app: departure.app }, 'reading a presence room count failed');
      }
    }
    return counts;
  }

  async #report(departure: Departure, counts: Map<string, MemberCount>): Promise<void> {
    const { app, room } = departure;
    try {
      if (departure.type === 'room.vacated') {
        await this.#deps.events.record(app, { type: 'room.vacated', room });
        return;
      }
      const { member } = departure;
      await this.#deps.events.record(app, { type: 'member.left', room, user: member.user });
      // The pages still in the room hear of it as if the page had closed.
      const data = memberChangeData(member, counts.get(`${app}\u0000${room}`));
      await this.#deps.broker.publish([{ app, room, event: '$member.left', data, presence: true }], this.#deps.now());
    } catch (error) {
      this.#deps.log.error({ err: error, app, type: departure.type }, 'reporting a departure of a dead node failed');
    }
  }

  close(): void {
    this.#lease.close();
  }
}
