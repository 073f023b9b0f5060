import type { Logger } from 'pino';
import type { NodeClaim, NodeStore } from '../engines/types.js';
import { StoreLease } from './store-lease.js';

/** A node that has not renewed for this long is dead: what its pages held is taken out by others. */
export const NODE_LEASE_MS = 15_000;
/** How long a sweeper holds a lapsed node before another may finish it (the sweeper died). */
export const NODE_CLAIM_MS = 10_000;
/** How many records of a dead node (calls, group members, stream members) one batch takes at most. */
export const SWEEP_BATCH = 100;
/** Lapsed nodes one sweep claims at most (the rest at the next sweep). */
const NODES_PER_SWEEP = 100;

/**
 * What a feature does with a lapsed node: takes out one bounded batch of what the node's pages held
 * there and reports it (each thing handed out once, by the store). 'more' when some is left.
 */
export type LapseHandler = (claim: NodeClaim) => Promise<'done' | 'more'>;

export interface NodeRegistryDeps {
  node: string;
  nodes: NodeStore;
  log: Logger;
  now: () => number;
  /** Default NODE_LEASE_MS; renewed three times per lease, swept every tenth of it (at most 2 s). */
  leaseMs?: number;
  /** Default NODE_CLAIM_MS. */
  claimMs?: number;
  /**
   * The node found its lease taken: it did not renew in time (paused, a stalled event loop, a store
   * that lost its data) and what its pages held was taken out. Its pages must go and come back to
   * count again.
   */
  lapsed?: () => void;
}

/**
 * This node's one lease, and the sweep of lapsed nodes for every feature: a node killed without
 * closing its pages is claimed by one live node within a lease and a sweep, and each feature
 * registered here (`onLapse`) takes out what that node's pages held, in the order registered. The
 * node is forgotten only once every feature finished; a sweeper that fails or dies leaves it to a
 * later claim, and each feature's store hands out each thing once, so nothing is reported twice.
 * Timing and the rules after a store failure are StoreLease's (renew first, never claim itself).
 */
export class NodeRegistry {
  readonly #deps: NodeRegistryDeps;
  readonly #claimMs: number;
  readonly #lease: StoreLease;
  readonly #handlers: { what: string; handler: LapseHandler }[] = [];
  /** The first renewal took the lease: only later ones can find it lapsed. */
  #held = false;

  constructor(deps: NodeRegistryDeps) {
    this.#deps = deps;
    this.#claimMs = deps.claimMs ?? NODE_CLAIM_MS;
    const leaseMs = deps.leaseMs ?? NODE_LEASE_MS;
    this.#lease = new StoreLease({
      leaseMs,
      sweepMs: 2000,
      log: deps.log,
      what: 'node',
      now: deps.now,
      renew: async () => {
        const held = await deps.nodes.renew(deps.node, deps.now(), leaseMs);
        if (!held && this.#held) {
          deps.log.warn('this node lost its lease (it did not renew in time): its pages reconnect to count again');
          deps.lapsed?.();
        }
        this.#held = true;
      },
      sweep: () => this.#sweep(),
    });
  }

  /** What `what` (a feature, for log lines) does with each lapsed node. Register before `start`. */
  onLapse(what: string, handler: LapseHandler): void {
    this.#handlers.push({ what, handler });
  }

  /** Takes the lease before the node serves a page, then renews and sweeps on timers. */
  start(): Promise<void> {
    return this.#lease.start();
  }

  /** Claims the lapsed nodes and has every feature take out what they held. Never throws. */
  sweep(): Promise<void> {
    return this.#lease.sweep();
  }

  close(): void {
    this.#lease.close();
  }

  async #sweep(): Promise<void> {
    const { nodes, node, now } = this.#deps;
    for (let n = 0; n < NODES_PER_SWEEP; n++) {
      const claim = await nodes.claim(now(), node, this.#claimMs);
      if (!claim) return;
      await this.#sweepNode(claim);
    }
  }

  /** Every feature in turn, batch by batch; one that fails leaves the node claimed for a later sweep. */
  async #sweepNode(claim: NodeClaim): Promise<void> {
    const { nodes, now, log } = this.#deps;
    let claimedAt = now();
    let failure: unknown;
    for (const { what, handler } of this.#handlers) {
      try {
        while ((await handler(claim)) === 'more') {
          // A long sweep keeps its claim, so nobody else starts over on the same node meanwhile.
          if (now() - claimedAt >= this.#claimMs / 3) {
            await nodes.extend(claim, now(), this.#claimMs);
            claimedAt = now();
          }
        }
      } catch (error) {
        log.error({ err: error, node: claim.node }, `sweeping the ${what} of a dead node failed`);
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
    await nodes.swept(claim);
  }
}
