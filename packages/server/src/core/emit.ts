import type { EventIds } from '@realtime/protocol';
import type { Broker, HistoryStore } from '../engines/types.js';
import type { ValidEvent } from './validate.js';

/** Characters of data above which one encoding is shared by the rooms of an emit. */
const SHARE_DATA_ABOVE = 16_384;

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

  /**
   * Stays synchronous when the stores are (the embedded engine): a promise per emit is measurable on
   * the API's hot path. With asynchronous stores each room's publish waits for that room's id.
   */
  emit(app: string, event: ValidEvent): EventIds | Promise<EventIds> {
    const ids: EventIds = {};
    const now = this.#now();
    // Large data to several rooms: encoded once here, shared by every room's frame.
    const dataBytes =
      event.data.length > SHARE_DATA_ABOVE && event.rooms.length > 1 ? Buffer.from(event.data) : undefined;
    const shared = dataBytes ? { dataBytes } : {};
    const pending: Promise<unknown>[] = [];
    for (const room of event.rooms) {
      const rule = event.history.get(room);
      const issued = rule
        ? this.#history.append(app, room, { event: event.event, data: event.data }, rule, now)
        : this.#history.nextId(app, room, now);
      // The answer lists the rooms that kept the event; pages see an id on every room event.
      if (issued instanceof Promise) {
        const published = issued.then((id) => {
          if (rule) ids[room] = id;
          return this.#broker.publish({ app, room, event: event.event, data: event.data, id, ...shared });
        });
        pending.push(published);
        continue;
      }
      if (rule) ids[room] = issued;
      const published = this.#broker.publish({
        app,
        room,
        event: event.event,
        data: event.data,
        id: issued,
        ...shared,
      });
      if (published instanceof Promise) pending.push(published);
    }
    for (const user of event.users) {
      const published = this.#broker.publish({ app, user, event: event.event, data: event.data });
      if (published instanceof Promise) pending.push(published);
    }
    return pending.length > 0 ? Promise.all(pending).then(() => ids) : ids;
  }
}
