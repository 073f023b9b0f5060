import type { EventIds } from '@realtime/protocol';
import type { Broker, MaybePromise, Outgoing } from '../engines/types.js';
import { type ConsoleTap, cutData } from './console-tap.js';
import type { ValidEvent } from './validate.js';

/** Characters of data above which one encoding is shared by the rooms of an emit. */
const SHARE_DATA_ABOVE = 16_384;

/**
 * emit and batch: every event of a call goes to the broker in one publish, which stores what the
 * rooms keep and publishes it as one step (all or nothing: a failed emit delivered nothing, so a
 * retry cannot deliver twice), giving each room event its id. The data's JSON text is shared by
 * every publication of the event.
 */
export class Emitter {
  readonly #broker: Broker;
  readonly #now: () => number;
  readonly #tap: ConsoleTap | undefined;

  constructor(deps: { broker: Broker; now: () => number; tap?: ConsoleTap }) {
    this.#broker = deps.broker;
    this.#now = deps.now;
    this.#tap = deps.tap;
  }

  /** Stays synchronous when the broker answers at once: a promise per emit is measurable on the hot path. */
  emit(app: string, event: ValidEvent): MaybePromise<EventIds> {
    const answers = this.emitAll(app, [event]);
    return answers instanceof Promise ? answers.then(first) : first(answers);
  }

  emitAll(app: string, events: readonly ValidEvent[]): MaybePromise<EventIds[]> {
    const outgoing: Outgoing[] = [];
    for (const event of events) {
      // Large data to several rooms: encoded once here, shared by every room's frame.
      const dataBytes =
        event.data.length > SHARE_DATA_ABOVE && event.rooms.length > 1 ? Buffer.from(event.data) : undefined;
      for (const room of event.rooms) {
        const one: Outgoing = { app, room, event: event.event, data: event.data };
        if (dataBytes) one.dataBytes = dataBytes;
        const keep = event.history.get(room);
        if (keep) one.keep = keep;
        outgoing.push(one);
      }
      for (const user of event.users) outgoing.push({ app, user, event: event.event, data: event.data });
    }
    const ids = this.#broker.publish(outgoing, this.#now());
    if (ids instanceof Promise) {
      return ids.then((known) => {
        if (this.#tap?.watching(app)) tapEmits(this.#tap, app, events);
        return answersOf(events, known);
      });
    }
    if (this.#tap?.watching(app)) tapEmits(this.#tap, app, events);
    return answersOf(events, ids);
  }
}

/** The live console's entries of an emit that went out: one per room and per user it went to. */
function tapEmits(tap: ConsoleTap, app: string, events: readonly ValidEvent[]): void {
  for (const { rooms, users, event, data: whole } of events) {
    // Cut once for every room: the data may be a megabyte.
    const data = cutData(whole);
    for (const room of rooms) tap.record(app, { kind: 'emit', room, event, data });
    for (const user of users) tap.record(app, { kind: 'emit', user, event, data });
  }
}

/** Each event's answer: the ids of the rooms that kept it (pages see an id on every room event). */
function answersOf(events: readonly ValidEvent[], ids: readonly (string | undefined)[]): EventIds[] {
  let at = 0;
  return events.map((event) => {
    const answer: EventIds = {};
    for (const room of event.rooms) {
      const id = ids[at++];
      if (id !== undefined && event.history.has(room)) answer[room] = id;
    }
    at += event.users.length;
    return answer;
  });
}

function first(answers: EventIds[]): EventIds {
  return answers[0] ?? {};
}
