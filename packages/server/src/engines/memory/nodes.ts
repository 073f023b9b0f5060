import type { NodeClaim, NodeStore } from '../node-store.js';

/**
 * Node leases in this process's memory: the embedded engine's, where one process is every node (a
 * node lapses only when it does not renew, as in a test). Times are the callers'. Answers at once.
 */
export class MemoryNodeStore implements NodeStore {
  /** Lease ends of the living, by node. */
  readonly #leases = new Map<string, number>();
  /** Lapsed nodes still to sweep: their lapse, and when their claim ends (0: unclaimed). */
  readonly #lapsed = new Map<string, { lapse: number; until: number }>();
  /** Numbers every lapse of every node. */
  #seq = 0;

  renew(node: string, nowMs: number, leaseMs: number): boolean {
    const held = this.#leases.has(node);
    this.#leases.set(node, nowMs + leaseMs);
    return held;
  }

  claim(nowMs: number, self: string, claimMs: number): NodeClaim | undefined {
    for (const [node, until] of this.#leases) {
      if (node === self || until > nowMs) continue;
      this.#leases.delete(node);
      const lapsed = this.#lapsed.get(node);
      // A node still being swept keeps its sweeper's claim; its new lapse is swept after.
      if (lapsed) lapsed.lapse = ++this.#seq;
      else this.#lapsed.set(node, { lapse: ++this.#seq, until: 0 });
    }
    for (const [node, lapsed] of this.#lapsed) {
      if (node === self || lapsed.until > nowMs) continue;
      lapsed.until = nowMs + claimMs;
      return { node, lapse: lapsed.lapse };
    }
    return undefined;
  }

  extend(claim: NodeClaim, nowMs: number, claimMs: number): void {
    const lapsed = this.#lapsed.get(claim.node);
    if (lapsed) lapsed.until = nowMs + claimMs;
  }

  swept(claim: NodeClaim): void {
    const lapsed = this.#lapsed.get(claim.node);
    if (!lapsed) return;
    if (lapsed.lapse === claim.lapse) this.#lapsed.delete(claim.node);
    else lapsed.until = 0;
  }

  close(): void {}
}
