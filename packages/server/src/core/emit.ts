import type { EventIds } from '@realtime/protocol';
import type { Broker, HistoryStore } from '../engines/types.js';
import type { ValidEvent } from './validate.js';

/**
 * emit: history first (so a page resuming right after the answer finds the event), then the broker.
 * The data's JSON text is shared by every publication of the event.
 */
export class Emitter {
  readonly #history: HistoryStore;
  readonly #broker: Broker;
  readonly #now: () => number;

  constructor(deps: { history: HistoryStore; broker: Broker; now: () => number }) {
    this.#history = deps.history;
    this.#broker = deps.broker;
    this.#now = deps.now;
  }

  async emit(app: string, event: ValidEvent): Promise<EventIds> {
    const ids: EventIds = {};
    const now = this.#now();
    for (const room of event.rooms) {
      const rule = event.history.get(room);
      const issued = rule
        ? this.#history.append(app, room, { event: event.event, data: event.data }, rule, now)
        : this.#history.nextId(app, room, now);
      const id = issued instanceof Promise ? await issued : issued;
      // The answer lists the rooms that kept the event; pages see an id on every room event.
      if (rule) ids[room] = id;
      const published = this.#broker.publish({ app, room, event: event.event, data: event.data, id });
      if (published instanceof Promise) await published;
    }
    for (const user of event.users) {
      const published = this.#broker.publish({ app, user, event: event.event, data: event.data });
      if (published instanceof Promise) await published;
    }
    return ids;
  }
}
