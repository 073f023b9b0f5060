import type { Engine, PublicationHandler } from './types.js';

/** Answers on a later turn of the event loop, in call order, as a store on the network would. */
function later<T>(call: () => T): Promise<Awaited<T>> {
  return new Promise((resolve, reject) => {
    setImmediate(() => {
      try {
        Promise.resolve(call()).then(resolve, reject);
      } catch (error) {
        reject(error);
      }
    });
  });
}

/** Every method of the object answering later; the object's own `this` kept. */
function deferred<T extends object>(store: T): T {
  return new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => later(() => (value as (...a: unknown[]) => unknown).apply(target, args));
    },
  });
}

/**
 * The engine with every store call answering asynchronously, and publications reaching subscribers
 * on a later turn: the code around the seams runs its networked paths against the embedded engine,
 * before (and besides) Redis. For tests (REALTIME_TEST_ENGINE=embedded-async).
 */
export function asyncEngine(engine: Engine): Engine {
  const broker = engine.broker;
  return {
    kind: engine.kind,
    node: engine.node,
    apps: deferred(engine.apps),
    history: deferred(engine.history),
    nodes: deferred(engine.nodes),
    presence: deferred(engine.presence),
    webhooks: deferred(engine.webhooks),
    limits: deferred(engine.limits),
    calls: deferred(engine.calls),
    groups: deferred(engine.groups),
    streams: deferred(engine.streams),
    dashboardSessions: deferred(engine.dashboardSessions),
    revocations: deferred(engine.revocations),
    idempotency: deferred(engine.idempotency),
    broker: {
      publish: (events, nowMs) => later(() => broker.publish(events, nowMs)),
      subscribe: (topic, handler) =>
        later(() => {
          // Deliveries come later too, in order, as from a subscriber connection.
          let stopped = false;
          const deferredHandler: PublicationHandler = (publication) =>
            setImmediate(() => {
              if (!stopped) handler(publication);
            });
          const stop = broker.subscribe(topic, deferredHandler);
          return async () => {
            stopped = true;
            await later(async () => (await stop)());
          };
        }),
      close: () => broker.close(),
    },
    check: () => later(() => engine.check()),
    close: () => engine.close(),
  };
}
