import { type Broker, type Publication, type PublicationHandler, topicOf, type Unsubscribe } from '../engines/types.js';
import { type Frame, frameAround, frameLength, frameString } from './ws-frame.js';

/** A page as the hub sees it: something frames can be handed to. */
export interface Page {
  readonly id: string;
  /** Bytes of live frames the page may have held back while it catches up on history. */
  readonly replayLimit: number;
  deliver(frame: Frame): void;
  /** The page cannot keep up: it is closed as a slow consumer. */
  slow(): void;
}

/** A page's place in a room. While `replay` is set the page is catching up on history: live frames wait there. */
export interface Seat<P extends Page = Page> {
  readonly page: P;
  replay: { id: string | undefined; frame: Frame }[] | undefined;
  /** Bytes held in `replay`: bounded like the page's outgoing queue. */
  replayBytes: number;
}

/** A topic this process listens to, for as long as it has pages there. */
interface Listening<T> {
  members: Set<T>;
  /** Settles once the broker confirmed the subscription. */
  subscribed: Promise<Unsubscribe>;
}

/**
 * The frame of a publication, encoded once for every page it goes to. A large `data` already encoded
 * by the emitter (`dataBytes`) is shared as is, not copied into each room's frame.
 */
export function encodeEvent(publication: Publication): Frame {
  let text = '{"t":"event"';
  if (publication.room !== undefined) text += `,"room":${JSON.stringify(publication.room)}`;
  if (publication.id !== undefined) text += `,"id":"${publication.id}"`;
  text += `,"event":${JSON.stringify(publication.event)}`;
  if (publication.from !== undefined) text += `,"from":${JSON.stringify(publication.from)}`;
  if (publication.dataBytes) return frameAround(`${text},"data":`, publication.dataBytes);
  return frameString(`${text},"data":${publication.data}}`);
}

/**
 * This process's pages by room and by user. It subscribes to the broker for each room and user that
 * has a page here (once, however many pages), and on each publication encodes the frame once and
 * hands it to every page there. One fan-out path, whatever the broker.
 */
export class Hub<P extends Page = Page> {
  readonly #broker: Broker;
  readonly #rooms = new Map<string, Listening<Seat>>();
  readonly #users = new Map<string, Listening<P>>();

  readonly #asks: (question: Publication, pages: readonly P[]) => void;

  /** `asks` takes the questions of asks to a user with pages here (they are no page event). */
  constructor(broker: Broker, asks: (question: Publication, pages: readonly P[]) => void = () => {}) {
    this.#broker = broker;
    this.#asks = asks;
  }

  /**
   * Seats a page in a room; resolves once the broker confirmed the room's subscription, so every
   * publication after that reaches the seat (a history read may follow without a gap). Rejects,
   * with the seat taken out again, when the subscription failed.
   */
  addSeat(app: string, room: string, seat: Seat): Promise<void> {
    return this.#add(
      this.#rooms,
      topicOf(app, { room }),
      seat,
      (seats) => (publication) => fanOutRoom(seats, publication),
    );
  }

  /** Removes a seat; the room's subscription ends with its last seat here. */
  removeSeat(app: string, room: string, seat: Seat): Promise<void> {
    return this.#remove(this.#rooms, topicOf(app, { room }), seat);
  }

  /** Adds a user's page; resolves once the user's subscription is confirmed (see addSeat). */
  addUserPage(app: string, user: string, page: P): Promise<void> {
    return this.#add(this.#users, topicOf(app, { user }), page, (pages) => (publication) => {
      if (publication.ask !== undefined) this.#asks(publication, [...pages]);
      else fanOutUser(pages, publication);
    });
  }

  removeUserPage(app: string, user: string, page: P): Promise<void> {
    return this.#remove(this.#users, topicOf(app, { user }), page);
  }

  async #add<T>(
    topics: Map<string, Listening<T>>,
    topic: string,
    member: T,
    handlerFor: (members: Set<T>) => PublicationHandler,
  ): Promise<void> {
    let entry = topics.get(topic);
    if (!entry) {
      const members = new Set<T>();
      let subscribed: Promise<Unsubscribe>;
      try {
        subscribed = Promise.resolve(this.#broker.subscribe(topic, handlerFor(members)));
      } catch (error) {
        subscribed = Promise.reject(error);
      }
      entry = { members, subscribed };
      topics.set(topic, entry);
    }
    entry.members.add(member);
    try {
      await entry.subscribed;
    } catch (error) {
      // The next page to come subscribes afresh.
      entry.members.delete(member);
      if (topics.get(topic) === entry) topics.delete(topic);
      throw error;
    }
  }

  async #remove<T>(topics: Map<string, Listening<T>>, topic: string, member: T): Promise<void> {
    const entry = topics.get(topic);
    if (!entry?.members.delete(member) || entry.members.size > 0) return;
    topics.delete(topic);
    const stop = await entry.subscribed.catch(() => undefined);
    if (stop) await stop();
  }

  /** The open pages of a user in this process. */
  pagesOf(app: string, user: string): P[] {
    const entry = this.#users.get(topicOf(app, { user }));
    return entry ? [...entry.members] : [];
  }

  get roomCount(): number {
    return this.#rooms.size;
  }
}

function fanOutRoom(seats: Set<Seat>, publication: Publication): void {
  const frame = encodeEvent(publication);
  for (const seat of seats) {
    if (seat.page.id === publication.origin) continue;
    if (!seat.replay) {
      seat.page.deliver(frame);
      continue;
    }
    if (seat.replayBytes > seat.page.replayLimit) continue; // closed as slow already
    seat.replay.push({ id: publication.id, frame });
    seat.replayBytes += frameLength(frame);
    if (seat.replayBytes > seat.page.replayLimit) seat.page.slow();
  }
}

function fanOutUser(pages: Set<Page>, publication: Publication): void {
  const frame = encodeEvent(publication);
  for (const page of pages) page.deliver(frame);
}
