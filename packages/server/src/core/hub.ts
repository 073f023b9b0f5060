import { isNewerEventId } from '@realtime/protocol';
import {
  type AskQuestion,
  type Broker,
  type MemberCount,
  type PublicationHandler,
  type RoomEvent,
  roomTopic,
  type Unsubscribe,
  type UserEvent,
  type UserFrame,
  userTopic,
} from '../engines/types.js';
import { type FrameEncoder, wsFrameEncoder } from './frame-encoder.js';
import { MEMBER_SCALE, type MemberScale, MemberWindow, readMemberChange } from './member-windows.js';
import type { Frame } from './ws-frame.js';

/** A page as the hub sees it: something frames can be handed to. */
export interface Page {
  readonly id: string;
  /** Bytes of live frames the page may have held back while it catches up on history. */
  readonly replayLimit: number;
  deliver(frame: Frame): void;
  /** The page cannot keep up: it is closed as a slow consumer. */
  slow(): void;
  /** Closes the page with a close code (its user was disconnected); pages that cannot be closed leave it out. */
  close?(code: number, reason: string): void;
}

/** A page's place in a room. While `replay` is set the page is catching up on history: live frames wait there. */
export interface Seat<P extends Page = Page> {
  readonly page: P;
  replay: { id: string | undefined; frame: Frame }[] | undefined;
  /** Bytes held in `replay`: bounded like the page's outgoing queue. */
  replayBytes: number;
  /**
   * After a replay: the ids it carried, and the newest. A networked broker may deliver an event's
   * live frame after the history read returned it: such a frame is dropped, any other delivered.
   * Once the live frames reach the newest replayed id, a room's ids arriving rising, this goes.
   */
  replayed?: { ids: Set<string>; newest: string } | undefined;
}

/** A topic this process listens to, for as long as it has pages there. */
interface Listening<T> {
  members: Set<T>;
  /** Settles once the broker confirmed the subscription. */
  subscribed: Promise<Unsubscribe>;
}

/**
 * This process's pages by room and by user. It subscribes to the broker for each room and user that
 * has a page here (once, however many pages), and on each publication has the encoder make the frame
 * once and hands it to every page there. One fan-out path, whatever the broker.
 */
export class Hub<P extends Page = Page> {
  readonly #broker: Broker;
  readonly #encoder: FrameEncoder;
  readonly #rooms = new Map<string, Listening<Seat>>();
  readonly #users = new Map<string, Listening<P>>();
  /** Presence of the rooms with pages here (by topic), from their first presence change or large join. */
  readonly #presence = new Map<string, MemberWindow>();
  #scale: MemberScale = { ...MEMBER_SCALE };

  readonly #asks: (question: AskQuestion, pages: readonly P[]) => void;

  /**
   * `encoder` makes the frames (the pages' WebSocket frames unless another is handed in); `asks` takes
   * the questions of asks to a user with pages here (they are no page event).
   */
  constructor(
    broker: Broker,
    encoder: FrameEncoder = wsFrameEncoder,
    asks: (question: AskQuestion, pages: readonly P[]) => void = () => {},
  ) {
    this.#broker = broker;
    this.#encoder = encoder;
    this.#asks = asks;
  }

  /** How presence scales on this node (the gateway's settings); the defaults are what ships. */
  configureMembers(scale: Partial<MemberScale>): void {
    this.#scale = { ...MEMBER_SCALE, ...scale };
  }

  get memberScale(): Readonly<MemberScale> {
    return this.#scale;
  }

  /**
   * A page here was given a partial member list (`joined` with a count): the room is large on this
   * node from now on, so that page only gets `members` frames. When it just became large, a window
   * opens at once: its frame carries the newest count to every page.
   */
  largeRoom(app: string, room: string, count: MemberCount): void {
    const topic = roomTopic(app, room);
    const seats = this.#rooms.get(topic)?.members;
    if (!seats) return;
    const window = this.#windowOf(topic);
    window.note(count);
    if (window.large) return;
    window.large = true;
    this.#schedule(topic, room, seats, window);
  }

  /**
   * Seats a page in a room; resolves once the broker confirmed the room's subscription, so every
   * publication after that reaches the seat (a history read may follow without a gap). Rejects,
   * with the seat taken out again, when the subscription failed.
   */
  addSeat(app: string, room: string, seat: Seat): Promise<void> {
    return this.#add(this.#rooms, roomTopic(app, room), seat, (seats) => (publication) => {
      if (publication.kind === 'room') this.#roomPublication(seats, publication);
    });
  }

  /** Removes a seat; the room's subscription ends with its last seat here. */
  removeSeat(app: string, room: string, seat: Seat): Promise<void> {
    const topic = roomTopic(app, room);
    const removed = this.#remove(this.#rooms, topic, seat);
    if (!this.#rooms.has(topic)) {
      // No page here any more: the window's changes have nobody to go to.
      const window = this.#presence.get(topic);
      if (window) clearTimeout(window.timer);
      this.#presence.delete(topic);
    }
    return removed;
  }

  #roomPublication(seats: Set<Seat>, publication: RoomEvent): void {
    const presence =
      publication.id === undefined && (publication.event === '$member.joined' || publication.event === '$member.left');
    const change = presence ? readMemberChange(publication) : undefined;
    if (!change) {
      fanOutRoom(seats, publication, this.#encoder);
      return;
    }
    const topic = roomTopic(publication.app, publication.room);
    const window = this.#windowOf(topic);
    window.note(change.count);
    if (!window.large && window.count > this.#scale.threshold) window.large = true;
    if (!window.large) {
      // A small room: one `$member.*` event per change, its data the member, as it always was.
      fanOutRoom(seats, { ...publication, data: JSON.stringify(change.member) }, this.#encoder);
      return;
    }
    if (window.add(change) >= this.#scale.maxChanges) this.#flush(topic, publication.room, seats, window);
    else this.#schedule(topic, publication.room, seats, window);
  }

  #windowOf(topic: string): MemberWindow {
    let window = this.#presence.get(topic);
    if (!window) {
      window = new MemberWindow();
      this.#presence.set(topic, window);
    }
    return window;
  }

  #schedule(topic: string, room: string, seats: Set<Seat>, window: MemberWindow): void {
    if (window.timer !== undefined) return;
    window.timer = setTimeout(() => this.#flush(topic, room, seats, window), window.windowMs(this.#scale));
    window.timer.unref();
  }

  /** Sends the window's changes as one frame to every page of the room here. */
  #flush(topic: string, room: string, seats: Set<Seat>, window: MemberWindow): void {
    clearTimeout(window.timer);
    window.timer = undefined;
    if (this.#presence.get(topic) !== window) return;
    fanOutFrame(seats, this.#encoder.text(window.take(room)), undefined, undefined, this.#encoder);
  }

  /** Adds a user's page; resolves once the user's subscription is confirmed (see addSeat). */
  addUserPage(app: string, user: string, page: P): Promise<void> {
    return this.#add(this.#users, userTopic(app, user), page, (pages) => (publication) => {
      if (publication.kind === 'user') fanOutUser(pages, publication, this.#encoder);
      else if (publication.kind === 'user.frame') fanOutPageFrame(pages, publication, this.#encoder);
      else if (publication.kind === 'user.close')
        for (const page of [...pages]) page.close?.(publication.code, publication.reason);
      else if (publication.kind === 'ask') this.#asks(publication, [...pages]);
    });
  }

  removeUserPage(app: string, user: string, page: P): Promise<void> {
    return this.#remove(this.#users, userTopic(app, user), page);
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
  /** The pages here that hear any of these topics (as rooms or as users): those a gap in them cut off. */
  pagesOn(topics: readonly string[]): Set<P> {
    const pages = new Set<P>();
    for (const topic of topics) {
      for (const seat of this.#rooms.get(topic)?.members ?? []) pages.add(seat.page as P);
      for (const page of this.#users.get(topic)?.members ?? []) pages.add(page);
    }
    return pages;
  }

  pagesOf(app: string, user: string): P[] {
    const entry = this.#users.get(userTopic(app, user));
    return entry ? [...entry.members] : [];
  }

  get roomCount(): number {
    return this.#rooms.size;
  }
}

function fanOutRoom(seats: Set<Seat>, publication: RoomEvent, encoder: FrameEncoder): void {
  fanOutFrame(seats, encoder.event(publication), publication.id, publication.origin, encoder);
}

/** Hands a room's frame to each seat, or to its replay queue while it catches up on history. */
function fanOutFrame(
  seats: Set<Seat>,
  frame: Frame,
  id: string | undefined,
  origin: string | undefined,
  encoder: FrameEncoder,
): void {
  let bytes = -1; // the frame's size, measured once when a seat is catching up
  for (const seat of seats) {
    if (seat.page.id === origin) continue;
    if (!seat.replay) {
      if (seat.replayed !== undefined && id !== undefined) {
        const { ids, newest } = seat.replayed;
        // The newest replayed id, or a later one: every frame the replay could have carried came.
        if (id === newest || isNewerEventId(id, newest)) seat.replayed = undefined;
        if (ids.has(id)) continue;
      }
      seat.page.deliver(frame);
      continue;
    }
    if (seat.replayBytes > seat.page.replayLimit) continue; // closed as slow already
    if (bytes < 0) bytes = encoder.length(frame);
    seat.replay.push({ id, frame });
    seat.replayBytes += bytes;
    if (seat.replayBytes > seat.page.replayLimit) seat.page.slow();
  }
}

/** A frame of a feature (a call's ring) for a user's pages here, but the one it came from. */
function fanOutPageFrame(pages: Set<Page>, publication: UserFrame, encoder: FrameEncoder): void {
  const frame = encoder.text(publication.frame);
  for (const page of pages) if (page.id !== publication.except) page.deliver(frame);
}

function fanOutUser(pages: Set<Page>, publication: UserEvent, encoder: FrameEncoder): void {
  const frame = encoder.event(publication);
  for (const page of pages) page.deliver(frame);
}
