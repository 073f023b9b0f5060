import type { Broker, HistoryStore } from '../engines/types.js';
import type { Deliverer } from '../webhooks/webhooks.js';
import type { Metrics } from './metrics.js';

/**
 * Decorators that count what passes through a seam, so the seams and their callers stay free of
 * metric code. Each keeps the wrapped call synchronous when it was.
 */

/** Counts publications: by target, and by source (a page send has an origin; `$` events are the service's own). */
export function countedBroker(broker: Broker, metrics: Metrics): Broker {
  const counts = metrics.published;
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  return {
    publish(publication) {
      if (publication.room === undefined) count('user api');
      else if (publication.origin !== undefined) count('room page');
      else if (publication.event.startsWith('$')) count('room service');
      else count('room api');
      return broker.publish(publication);
    },
    subscribe: (topic, handler) => broker.subscribe(topic, handler),
    close: () => broker.close(),
  };
}

/** Times history appends until they are stored (committed), and counts them by result. */
export function timedHistory(history: HistoryStore, metrics: Metrics): HistoryStore {
  const ok = metrics.historyAppends.labels('ok');
  const failed = metrics.historyAppends.labels('failed');
  const seconds = metrics.historyAppendSeconds;
  const append: HistoryStore['append'] = (app, room, entry, rule, nowMs) => {
    const started = performance.now();
    const done = () => seconds.observe((performance.now() - started) / 1000);
    let issued: ReturnType<HistoryStore['append']>;
    try {
      issued = history.append(app, room, entry, rule, nowMs);
    } catch (error) {
      failed.inc();
      throw error;
    }
    if (!(issued instanceof Promise)) {
      ok.inc();
      done();
      return issued;
    }
    return issued.then(
      (id) => {
        ok.inc();
        done();
        return id;
      },
      (error: unknown) => {
        failed.inc();
        throw error;
      },
    );
  };
  // Plain delegation: the stores keep private fields, so a prototype-based wrapper would break them.
  return {
    append,
    // Bound, not wrapped: nextId is on every emit's path and needs no counting.
    nextId: history.nextId.bind(history),
    since: (...args) => history.since(...args),
    last: (...args) => history.last(...args),
    prune: (...args) => history.prune(...args),
    close: () => history.close(),
  };
}

/** Counts webhook tries by status and error. */
export function countedDeliverer(deliverer: Deliverer, metrics: Metrics): Deliverer {
  return {
    async deliver(url, body, headers) {
      const result = await deliverer.deliver(url, body, headers);
      metrics.webhookTries.labels(String(result.status), result.error ?? 'none').inc();
      return result;
    },
    close: () => deliverer.close(),
  };
}
