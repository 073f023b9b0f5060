import { StoreError, type StoreErrorKind } from '../src/engines/store-error.js';
import type { HistoryStore } from '../src/engines/types.js';

/**
 * A history store whose appends fail on demand, as a full or broken disk would make them: `failure`
 * names the kind for a room (undefined: the append goes through). Everything else is the real store.
 */
export function failingAppends(
  history: HistoryStore,
  failure: (room: string) => StoreErrorKind | undefined,
): HistoryStore {
  return {
    append: (app, room, entry, rule, nowMs) => {
      const kind = failure(room);
      if (kind) throw new StoreError(kind);
      return history.append(app, room, entry, rule, nowMs);
    },
    nextId: (...args) => history.nextId(...args),
    since: (...args) => history.since(...args),
    last: (...args) => history.last(...args),
    count: (...args) => history.count(...args),
    prune: (...args) => history.prune(...args),
    removeApp: (...args) => history.removeApp(...args),
    close: () => history.close(),
  };
}
