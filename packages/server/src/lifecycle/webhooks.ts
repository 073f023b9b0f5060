import type { EventSink } from '../core/events.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { Component } from './component.js';

/**
 * The webhook queue, closed after the HTTP drain (requests in flight still record events) and before
 * the engine. Its delivery starts in `webhookDelivery`, once the port is open.
 */
export function webhooksComponent(webhooks: Webhooks): Component {
  return { name: 'webhooks', start: () => {}, stop: () => webhooks.close() };
}

/** Picks up what the store holds and starts sending: only a server that listens sends webhooks. */
export function webhookDelivery(webhooks: Webhooks): Component {
  // Stopped by `webhooksComponent`, which holds the queue.
  return { name: 'webhook delivery', start: () => webhooks.start(), stop: () => {} };
}

/** Where app events go: the webhook queue, and `extra` too (tests read it) once the queue stored them. */
export function withExtraSink(webhooks: Webhooks, extra: EventSink | undefined): EventSink {
  if (!extra) return webhooks;
  return {
    record: (app, event) => {
      const recorded = webhooks.record(app, event);
      // Once stored: an event the store refused (and Departures tries again) is seen once.
      if (recorded === undefined) return extra.record(app, event);
      return recorded.then(() => extra.record(app, event));
    },
    reportOf: (app, event) => webhooks.reportOf(app, event),
    reported: (app, event) => {
      webhooks.reported(app, event);
      extra.reported(app, event);
    },
  };
}
