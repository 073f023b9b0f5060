import type { HistoryRule } from '@realtime/protocol';
import type { HistoryStore } from '../types.js';
import type { GroupCommit } from './group-commit.js';
import { withStoreErrors } from './sqlite-error.js';
import type { WriteUnits } from './write-units.js';

/**
 * The SQLite history store with group-committed appends. An append made inside a write unit is part
 * of that unit (answered at once, committed with it); any other append becomes a unit of its own,
 * answered once the turn's group is committed. Ids still rise strictly per room: the wrapped store
 * issues them, in the order the units are written. Reads go straight through.
 *
 * The wrapped store must be synchronous (SQLite): its statements join the group's transaction.
 */
export class CommittedHistory implements HistoryStore, WriteUnits {
  readonly #commits: GroupCommit;
  readonly #store: HistoryStore;

  constructor(commits: GroupCommit, store: HistoryStore) {
    this.#commits = commits;
    this.#store = store;
  }

  run<S, R>(write: () => S, deliver: (stored: S) => R): Promise<Awaited<R>> {
    return this.#commits.run(write, deliver);
  }

  append(
    app: string,
    room: string,
    entry: { event: string; data: string; from?: string },
    rule: HistoryRule,
    nowMs: number,
  ): Promise<string> | string {
    if (this.#commits.writing) return this.#store.append(app, room, entry, rule, nowMs);
    return this.#commits.run(
      () => this.#store.append(app, room, entry, rule, nowMs),
      (id) => id,
    );
  }

  // The rest goes straight through (SQLite errors as StoreErrors), typed by the interface so it
  // follows the interface's changes.
  readonly nextId: HistoryStore['nextId'] = withStoreErrors((...args: Parameters<HistoryStore['nextId']>) =>
    this.#store.nextId(...args),
  );
  readonly since: HistoryStore['since'] = withStoreErrors((...args: Parameters<HistoryStore['since']>) =>
    this.#store.since(...args),
  );
  readonly last: HistoryStore['last'] = withStoreErrors((...args: Parameters<HistoryStore['last']>) =>
    this.#store.last(...args),
  );
  readonly count: HistoryStore['count'] = withStoreErrors((...args: Parameters<HistoryStore['count']>) =>
    this.#store.count(...args),
  );
  readonly prune: HistoryStore['prune'] = withStoreErrors((...args: Parameters<HistoryStore['prune']>) =>
    this.#store.prune(...args),
  );
  readonly removeApp: HistoryStore['removeApp'] = withStoreErrors((...args: Parameters<HistoryStore['removeApp']>) =>
    this.#store.removeApp(...args),
  );
  readonly close: HistoryStore['close'] = () => this.#store.close();
}
