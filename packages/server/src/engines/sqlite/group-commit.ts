import { StoreError } from '../store-error.js';
import type { Db } from './db.js';
import { asStoreError } from './sqlite-error.js';
import type { WriteUnits } from './write-units.js';

interface Unit {
  write: () => unknown;
  deliver: (stored: unknown) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Stored = [unit: Unit, value: unknown];

/** What a store on the file may follow of a group: work it defers must share the fate of what it wrote. */
export interface GroupHooks {
  /** A unit's savepoint was released (kept) or rolled back (its writes undone). */
  unitEnded(kept: boolean): void;
  /** Inside the transaction, after every unit; throwing fails the group. */
  beforeCommit(): void;
  /** The group's transaction was rolled back: nothing of it is kept. */
  groupFailed(): void;
}

/**
 * Units per transaction; a group this full is committed at once. Bounds how long one commit holds
 * the write lock (the CLI waits for it) and how long the first unit of a group waits.
 */
const MAX_UNITS = 256;

/**
 * Write units of the SQLite file, committed in groups: the units given during one turn of the event
 * loop share one transaction (each in a savepoint of its own, so a unit whose write fails is undone
 * alone), committed once; then each unit delivers, in order. One commit per turn instead of one per
 * operation is what lets emits with history keep up with emits without.
 *
 * Stores on the same file take part by being called inside a unit's write: their statements join
 * the open transaction (see `writing`). A failed commit fails every unit of it, and none delivers.
 */
export class GroupCommit implements WriteUnits {
  readonly #maxUnits: number;
  #pending: Unit[] = [];
  #scheduled = false;
  #flushing = false;
  #writing = false;
  #tainted: { error: unknown } | undefined;
  /** Deliveries under way (only when one returned a promise): later ones wait, so order holds. */
  #delivering: Promise<void> | undefined;
  #closed = false;
  readonly #hooks: GroupHooks[] = [];
  readonly #group;
  readonly #unit;
  readonly #flushSoon = () => {
    this.#scheduled = false;
    this.#flush();
  };

  constructor(db: Db, options: { maxUnits?: number } = {}) {
    this.#maxUnits = options.maxUnits ?? MAX_UNITS;
    this.#group = db.transaction((units: Unit[], stored: Stored[], failed: Stored[]) => {
      for (const unit of units) {
        // A write that swallowed an error may have lost the transaction: never go on outside it.
        if (!db.inTransaction) throw new StoreError('unavailable');
        try {
          stored.push([unit, this.#unit(unit)]);
          for (const hooks of this.#hooks) hooks.unitEnded(true);
        } catch (error) {
          for (const hooks of this.#hooks) hooks.unitEnded(false);
          // SQLite rolls the whole transaction back on some errors (a full disk, I/O): all fail.
          if (!db.inTransaction) throw error;
          failed.push([unit, error]);
        }
      }
      // In the transaction: a hook that fails fails the group.
      for (const hooks of this.#hooks) hooks.beforeCommit();
    });
    // Called inside #group, so a savepoint: a unit that throws is rolled back alone.
    this.#unit = db.transaction((unit: Unit) => {
      this.#tainted = undefined;
      const value = unit.write();
      // Set by a store during the write (TypeScript cannot see that).
      const tainted = this.#tainted as { error: unknown } | undefined;
      if (tainted) throw tainted.error;
      return value;
    });
  }

  /** Follows the group's units and its fate: see GroupHooks. */
  addHooks(hooks: GroupHooks): void {
    this.#hooks.push(hooks);
  }

  /** True while a unit's write runs: store calls made now are part of its transaction. */
  get writing(): boolean {
    return this.#writing;
  }

  /** No unit waits for its commit or delivery: work that must follow those may go at once. */
  get idle(): boolean {
    return this.#pending.length === 0 && this.#delivering === undefined && !this.#flushing;
  }

  /**
   * A store on this file reports a failed statement whose error its caller may swallow (the webhook
   * queue's): the unit being written fails anyway, so nothing of it is kept.
   */
  taint(error: unknown): void {
    if (this.#writing && !this.#tainted) this.#tainted = { error };
  }

  run<S, R>(write: () => S, deliver: (stored: S) => R): Promise<Awaited<R>> {
    if (this.#closed) return Promise.reject(new StoreError('unavailable', { message: 'the service is stopping' }));
    return new Promise<Awaited<R>>((resolve, reject) => {
      this.#pending.push({
        write,
        deliver: deliver as (stored: unknown) => unknown,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      if (this.#pending.length >= this.#maxUnits && !this.#flushing) this.#flush();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        // After the I/O callbacks of this turn: every request read in it joins the same commit.
        setImmediate(this.#flushSoon);
      }
    });
  }

  /** Commits what is waiting, then refuses new units; resolves once every delivery is done. */
  async close(): Promise<void> {
    this.#flush();
    this.#closed = true;
    await this.#delivering;
  }

  #flush(): void {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        const units = this.#pending.splice(0, this.#maxUnits);
        this.#deliverInOrder(this.#commit(units));
      }
    } finally {
      this.#flushing = false;
    }
  }

  /** Writes and commits the units; rejects those that failed; returns the stored ones, in order. */
  #commit(units: Unit[]): Stored[] {
    const stored: Stored[] = [];
    const failed: Stored[] = [];
    this.#writing = true;
    try {
      this.#group(units, stored, failed);
    } catch (error) {
      // The commit failed, or the transaction was lost: nothing of this group is kept.
      for (const hooks of this.#hooks) hooks.groupFailed();
      const cause = asStoreError(error);
      const own = new Set(failed.map(([unit]) => unit));
      for (const unit of units) if (!own.has(unit)) unit.reject(cause);
      stored.length = 0;
    } finally {
      this.#writing = false;
      this.#tainted = undefined;
    }
    for (const [unit, error] of failed) unit.reject(asStoreError(error));
    return stored;
  }

  #deliverInOrder(stored: Stored[]): void {
    if (stored.length === 0) return;
    const previous = this.#delivering;
    const pending = previous ? previous.then(() => this.#deliverFrom(stored, 0)) : this.#deliverFrom(stored, 0);
    if (!pending) return;
    const tracked: Promise<void> = pending.then(() => {
      if (this.#delivering === tracked) this.#delivering = undefined;
    });
    this.#delivering = tracked;
  }

  /** Delivers from index `from` on; a delivery that returns a promise is waited for before the next. */
  #deliverFrom(stored: Stored[], from: number): Promise<void> | undefined {
    for (let i = from; i < stored.length; i++) {
      const [unit, value] = stored[i] as Stored;
      let delivered: unknown;
      try {
        delivered = unit.deliver(value);
      } catch (error) {
        unit.reject(error);
        continue;
      }
      if (delivered instanceof Promise) {
        return delivered.then(unit.resolve, unit.reject).then(() => this.#deliverFrom(stored, i + 1));
      }
      unit.resolve(delivered);
    }
    return undefined;
  }
}
