import type { MemoryFanout } from '../memory/fanout.js';
import type {
  Broker,
  HistoryStore,
  Outgoing,
  OutgoingRoomEvent,
  PublicationHandler,
  RoomEvent,
  Unsubscribe,
  WebhookStore,
} from '../types.js';
import type { GroupCommit } from './group-commit.js';
import { asStoreError } from './sqlite-error.js';

/** The stores' statements must run inside the unit's transaction: synchronous calls only. */
function stored<T>(value: T | Promise<T>): T {
  if (value instanceof Promise) throw new TypeError('the embedded broker needs synchronous SQLite stores');
  return value;
}

/** The room event as delivered: its id, and none of what was stored with it (keep, report, presence). */
function roomEvent(event: OutgoingRoomEvent, id: string | undefined): RoomEvent {
  const publication: RoomEvent = {
    kind: 'room',
    app: event.app,
    room: event.room,
    event: event.event,
    data: event.data,
  };
  if (event.dataBytes !== undefined) publication.dataBytes = event.dataBytes;
  if (id !== undefined) publication.id = id;
  if (event.from !== undefined) publication.from = event.from;
  if (event.origin !== undefined) publication.origin = event.origin;
  return publication;
}

/**
 * The embedded engine's broker: ids, history and reports go into the SQLite file through the group
 * commit, then the memory fan-out delivers. One process issues every id and delivers in the order
 * it issued them, so a room's ids rise at every page. A publish that stores nothing still waits its
 * turn behind units not yet delivered, or it would overtake them (an unkept event after a kept one).
 */
export class CommittedBroker implements Broker {
  readonly #commits: GroupCommit;
  readonly #history: HistoryStore;
  readonly #webhooks: WebhookStore;
  readonly #fanout: MemoryFanout;

  constructor(deps: {
    commits: GroupCommit;
    history: HistoryStore;
    webhooks: WebhookStore;
    fanout: MemoryFanout;
  }) {
    this.#commits = deps.commits;
    this.#history = deps.history;
    this.#webhooks = deps.webhooks;
    this.#fanout = deps.fanout;
  }

  /** Synchronous when nothing is stored and nothing waits: a promise per emit is measurable on the API's hot path. */
  publish(events: readonly Outgoing[], nowMs: number): (string | undefined)[] | Promise<(string | undefined)[]> {
    const stores = events.some(
      (event) => event.kind === 'room' && (event.keep !== undefined || event.report !== undefined),
    );
    if (!stores && this.#commits.idle) {
      let ids: (string | undefined)[];
      try {
        ids = this.#write(events, nowMs);
      } catch (error) {
        throw asStoreError(error);
      }
      return this.#deliver(events, ids);
    }
    return this.#commits.run(
      () => this.#write(events, nowMs),
      (ids) => this.#deliver(events, ids),
    );
  }

  /** Issues each room event's id; appends what is kept and stores reports (inside the unit's transaction). */
  #write(events: readonly Outgoing[], nowMs: number): (string | undefined)[] {
    return events.map((event) => {
      if (event.kind !== 'room' || event.presence) return undefined;
      const { app, room } = event;
      let id: string;
      if (event.keep) {
        const entry =
          event.from === undefined
            ? { event: event.event, data: event.data }
            : { event: event.event, data: event.data, from: event.from };
        id = stored(this.#history.append(app, room, entry, event.keep, nowMs));
      } else {
        id = stored(this.#history.nextId(app, room, nowMs));
      }
      if (event.report) stored(this.#webhooks.addEvent(app, `${event.report.before}${id}${event.report.after}`));
      return id;
    });
  }

  #deliver(events: readonly Outgoing[], ids: (string | undefined)[]): (string | undefined)[] {
    events.forEach((event, i) => {
      // Room events leave what was stored with them behind and take their id; the others go as they are.
      this.#fanout.publish(event.kind === 'room' ? roomEvent(event, ids[i]) : event);
    });
    return ids;
  }

  subscribe(topic: string, handler: PublicationHandler): Unsubscribe {
    return this.#fanout.subscribe(topic, handler);
  }

  close(): void {
    this.#fanout.close();
  }
}
