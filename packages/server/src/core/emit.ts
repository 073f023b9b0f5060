import type { EventIds } from '@realtime/protocol';
import type { Broker, HistoryStore } from '../engines/types.js';
import { type WriteUnits, writeUnitsOf } from '../engines/write-units.js';
import type { ValidEvent } from './validate.js';

/** Characters of data above which one encoding is shared by the rooms of an emit. */
const SHARE_DATA_ABOVE = 16_384;

/** The id of each room of an event, in the event's room order. */
type Issued = (string | Promise<string>)[];

/**
 * emit: store, then deliver. Everything an emit (or a batch) keeps is stored before any room hears
 * of it: with write units (the embedded engine) in one transaction, so a failed emit delivered
 * nothing and a retry cannot deliver twice. Without them the appends still all finish before the
 * first publish. The data's JSON text is shared by every publication of the event.
 */
export class Emitter {
  readonly #history: HistoryStore;
  readonly #broker: Broker;
  readonly #now: () => number;
  readonly #units: WriteUnits | undefined;

  constructor(deps: { history: HistoryStore; broker: Broker; now: () => number }) {
    this.#history = deps.history;
    this.#broker = deps.broker;
    this.#now = deps.now;
    this.#units = writeUnitsOf(deps.history);
  }

  /**
   * Stays synchronous when nothing is kept and the stores are synchronous: a promise per emit is
   * measurable on the API's hot path.
   */
  emit(app: string, event: ValidEvent): EventIds | Promise<EventIds> {
    const now = this.#now();
    const answers =
      this.#units && event.history.size > 0
        ? this.#units.run(
            () => [this.#issue(app, event, now)],
            (issued) => this.#deliver(app, [event], issued),
          )
        : this.#deliver(app, [event], [this.#issue(app, event, now)]);
    return answers instanceof Promise ? answers.then(first) : first(answers);
  }

  /** emit/batch: every event is stored before any is delivered, then they are delivered in order. */
  emitAll(app: string, events: readonly ValidEvent[]): EventIds[] | Promise<EventIds[]> {
    const now = this.#now();
    const write = () => events.map((event) => this.#issue(app, event, now));
    if (this.#units && events.some((event) => event.history.size > 0)) {
      return this.#units.run(write, (issued) => this.#deliver(app, events, issued));
    }
    return this.#deliver(app, events, write());
  }

  /** Appends to the rooms that keep the event; an id from the same sequence for the others. */
  #issue(app: string, event: ValidEvent, now: number): Issued {
    return event.rooms.map((room) => {
      const rule = event.history.get(room);
      return rule
        ? this.#history.append(app, room, { event: event.event, data: event.data }, rule, now)
        : this.#history.nextId(app, room, now);
    });
  }

  /** Publishes the events in order once every id is known; answers each with its kept rooms' ids. */
  #deliver(app: string, events: readonly ValidEvent[], issued: Issued[]): EventIds[] | Promise<EventIds[]> {
    if (issued.some((ids) => ids.some((id) => typeof id !== 'string'))) {
      return Promise.all(issued.map((ids) => Promise.all(ids))).then((known) => this.#deliver(app, events, known));
    }
    const pending: Promise<unknown>[] = [];
    const answers = events.map((event, i) => this.#publish(app, event, (issued[i] ?? []) as string[], pending));
    return pending.length > 0 ? Promise.all(pending).then(() => answers) : answers;
  }

  #publish(app: string, event: ValidEvent, ids: readonly string[], pending: Promise<unknown>[]): EventIds {
    const answer: EventIds = {};
    // Large data to several rooms: encoded once here, shared by every room's frame.
    const dataBytes =
      event.data.length > SHARE_DATA_ABOVE && event.rooms.length > 1 ? Buffer.from(event.data) : undefined;
    const shared = dataBytes ? { dataBytes } : {};
    event.rooms.forEach((room, i) => {
      const id = ids[i] as string;
      // The answer lists the rooms that kept the event; pages see an id on every room event.
      if (event.history.has(room)) answer[room] = id;
      const published = this.#broker.publish({ app, room, event: event.event, data: event.data, id, ...shared });
      if (published instanceof Promise) pending.push(published);
    });
    for (const user of event.users) {
      const published = this.#broker.publish({ app, user, event: event.event, data: event.data });
      if (published instanceof Promise) pending.push(published);
    }
    return answer;
  }
}

function first(answers: EventIds[]): EventIds {
  return answers[0] ?? {};
}
