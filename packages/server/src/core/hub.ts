import { type Broker, type Publication, topicOf } from '../engines/types.js';
import { type Frame, frameAround, frameLength, frameString } from '../gateway/ws-frame.js';

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

interface RoomEntry {
  seats: Set<Seat>;
  stop: () => void;
}

interface UserEntry<P extends Page> {
  pages: Set<P>;
  stop: () => void;
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
  readonly #rooms = new Map<string, RoomEntry>();
  readonly #users = new Map<string, UserEntry<P>>();

  constructor(broker: Broker) {
    this.#broker = broker;
  }

  /** Seats a page in a room; true when it is the first page of the room in this process. */
  addSeat(app: string, room: string, seat: Seat): boolean {
    const topic = topicOf(app, { room });
    let entry = this.#rooms.get(topic);
    const first = !entry;
    if (!entry) {
      const seats = new Set<Seat>();
      entry = { seats, stop: this.#broker.subscribe(topic, (publication) => fanOutRoom(seats, publication)) };
      this.#rooms.set(topic, entry);
    }
    entry.seats.add(seat);
    return first;
  }

  /** Removes a seat; true when it was the last page of the room in this process. */
  removeSeat(app: string, room: string, seat: Seat): boolean {
    const topic = topicOf(app, { room });
    const entry = this.#rooms.get(topic);
    if (!entry?.seats.delete(seat)) return false;
    if (entry.seats.size > 0) return false;
    entry.stop();
    this.#rooms.delete(topic);
    return true;
  }

  addUserPage(app: string, user: string, page: P): void {
    const topic = topicOf(app, { user });
    let entry = this.#users.get(topic);
    if (!entry) {
      const pages = new Set<P>();
      entry = { pages, stop: this.#broker.subscribe(topic, (publication) => fanOutUser(pages, publication)) };
      this.#users.set(topic, entry);
    }
    entry.pages.add(page);
  }

  removeUserPage(app: string, user: string, page: P): void {
    const topic = topicOf(app, { user });
    const entry = this.#users.get(topic);
    if (!entry?.pages.delete(page)) return;
    if (entry.pages.size > 0) return;
    entry.stop();
    this.#users.delete(topic);
  }

  /** The open pages of a user in this process. */
  pagesOf(app: string, user: string): P[] {
    const entry = this.#users.get(topicOf(app, { user }));
    return entry ? [...entry.pages] : [];
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
