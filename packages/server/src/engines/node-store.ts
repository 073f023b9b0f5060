import type { MaybePromise } from './maybe-promise.js';

/** A node whose lease ended, handed to one sweeper (see NodeStore.claim). */
export interface NodeClaim {
  node: string;
  /**
   * Which lapse of the node this is: a number that rises over every lapse of every node, the same
   * for each claim of one lapse (a sweeper that died leaves it to the next). A feature that must
   * do something once per lapse (presence sets the node's pages apart) compares it.
   */
  lapse: number;
}

/**
 * Which nodes are alive, counted over every node: the one lease of a node (presence, calls, group
 * calls and live streams all go by it). Contract:
 * - A node renews its lease while it lives. A store shared by nodes times leases by its own clock,
 *   so the nodes' clocks need not agree (`nowMs` where it has none).
 * - A node whose lease ended lapses: it is out of the living, and `claim` hands it to one sweeper
 *   at a time, for `claimMs`. The sweeper takes out what the node held in every feature, then says
 *   `swept`; a sweeper that dies (its claim ends first) leaves the node to the next claim.
 * - A node never claims itself: a node that sweeps is alive, and its lease only looks ended because
 *   the store could not be reached to renew it.
 * - A node that lapsed and renews again is alive again (renew answers false that once, so it learns
 *   that what it held was taken out); the claim of its lapse stays until it is swept.
 */
export interface NodeStore {
  /**
   * Keeps the node alive for `leaseMs` from now. Answers whether the store still held its lease:
   * false at its first renewal, and once it lapsed (it was paused past its lease): what it held was
   * taken out, or is being taken out, by others.
   */
  renew(node: string, nowMs: number, leaseMs: number): MaybePromise<boolean>;
  /**
   * Claims one lapsed node for `claimMs` (never `self`): one whose lease ended and nobody claimed
   * yet, or whose claim ended before its sweeper said `swept`. Undefined when there is none.
   */
  claim(nowMs: number, self: string, claimMs: number): MaybePromise<NodeClaim | undefined>;
  /** Keeps a claim for `claimMs` from now (a long sweep); nothing when it is no longer claimed. */
  extend(claim: NodeClaim, nowMs: number, claimMs: number): MaybePromise<void>;
  /**
   * The claimed node was swept in every feature: it is forgotten, unless it lapsed again meanwhile
   * (a later `lapse`): then it can be claimed again at once.
   */
  swept(claim: NodeClaim): MaybePromise<void>;
  close(): MaybePromise<void>;
}
