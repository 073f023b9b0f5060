import type { Broker, IdempotencyStore } from '../engines/types.js';
import type { Deliverer } from '../webhooks/webhooks.js';
import type { Metrics } from './metrics.js';

/**
 * Decorators that count what passes through a seam, so the seams and their callers stay free of
 * metric code. Each keeps the wrapped call synchronous when it was.
 */

/**
 * Counts publications by target and source (a page send has an origin; `$` events are the service's
 * own), and times the publishes that keep history until they are stored and published (the shared
 * commit included), counting the kept events by result.
 */
export function countedBroker(broker: Broker, metrics: Metrics): Broker {
  const counts = metrics.published;
  const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
  const ok = metrics.historyAppends.labels('ok');
  const failed = metrics.historyAppends.labels('failed');
  const seconds = metrics.historyAppendSeconds;
  return {
    publish(events, nowMs) {
      let kept = 0;
      for (const event of events) {
        if (event.kind !== 'room') {
          // Publications to users and nodes count as the API's to users, as they always have.
          count('user api');
          continue;
        }
        if (event.keep) kept++;
        if (event.origin !== undefined) count('room page');
        else if (event.event.startsWith('$')) count('room service');
        else count('room api');
      }
      if (kept === 0) return broker.publish(events, nowMs);
      const started = performance.now();
      const done = () => {
        ok.inc(kept);
        seconds.observe((performance.now() - started) / 1000);
      };
      let published: ReturnType<Broker['publish']>;
      try {
        published = broker.publish(events, nowMs);
      } catch (error) {
        failed.inc(kept);
        throw error;
      }
      if (!(published instanceof Promise)) {
        done();
        return published;
      }
      return published.then(
        (ids) => {
          done();
          return ids;
        },
        (error: unknown) => {
          failed.inc(kept);
          throw error;
        },
      );
    },
    subscribe: (topic, handler) => broker.subscribe(topic, handler),
    ...(broker.onGap
      ? { onGap: (listener: (topics?: readonly string[]) => void) => broker.onGap?.(listener) ?? (() => {}) }
      : {}),
    close: () => broker.close(),
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

/** Counts what each Idempotency-Key reserve found (first use, a retry answered, in flight, a conflict). */
export function countedIdempotency(store: IdempotencyStore, metrics: Metrics): IdempotencyStore {
  const outcomes = metrics.idempotentEmits;
  return {
    reserve(app, key, fingerprint, owner, holdUntilMs, nowMs) {
      const found = store.reserve(app, key, fingerprint, owner, holdUntilMs, nowMs);
      if (!(found instanceof Promise)) {
        outcomes.labels(found.state).inc();
        return found;
      }
      return found.then((reservation) => {
        outcomes.labels(reservation.state).inc();
        return reservation;
      });
    },
    complete: (app, key, owner, answer, keepUntilMs, nowMs) =>
      store.complete(app, key, owner, answer, keepUntilMs, nowMs),
    release: (app, key, owner) => store.release(app, key, owner),
  };
}
