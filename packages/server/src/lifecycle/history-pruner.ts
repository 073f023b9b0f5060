import type { HistoryStore } from '../engines/types.js';
import type { Logger } from '../log.js';
import type { Component } from './component.js';

const HISTORY_PRUNE_MS = 60_000;

/** Deletes expired history every minute. */
export function historyPruner(history: HistoryStore, log: Logger, now: () => number): Component {
  let pruner: NodeJS.Timeout | undefined;
  const pruneHistory = async () => {
    try {
      await history.prune(now());
    } catch (error) {
      // A full disk fails deletes too: logged, tried again next time.
      log.error({ err: error }, 'pruning history failed');
    }
  };
  return {
    name: 'history pruner',
    start: () => {
      pruner = setInterval(() => void pruneHistory(), HISTORY_PRUNE_MS);
      pruner.unref();
    },
    stop: () => clearInterval(pruner),
  };
}
