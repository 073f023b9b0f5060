/**
 * Operations that store something before delivering it (an emit with history, a page send with a
 * webhook event) hand their writes over as a unit, so what is stored is all or nothing and nothing
 * is delivered before it is stored.
 */
export interface WriteUnits {
  /**
   * Runs `write` when the unit's turn comes: every store call it makes (synchronously) is committed
   * with the others, or none is. Then `deliver` runs with what `write` returned; units deliver in
   * the order they were given, each before the next, so ids issued in one order reach pages in it.
   * Resolves with what `deliver` returned; a failed write or commit rejects (a StoreError when the
   * store failed) and `deliver` never runs.
   */
  run<S, R>(write: () => S, deliver: (stored: S) => R): Promise<Awaited<R>>;
}
