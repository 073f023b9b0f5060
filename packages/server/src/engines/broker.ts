import type { HistoryRule } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';

/** An event on its way to pages: to a room (with its id) or to a user's pages. */
export interface Publication {
  app: string;
  /**
   * Exactly one of room, user, node or broadcast is set. A node is addressed by the answers to its
   * asks (see `ask`), which are not page events.
   */
  room?: string;
  user?: string;
  node?: string;
  /**
   * A broadcast topic's name: every node subscribed to it gets the publication (the service's own
   * messages between nodes, such as which apps a live console watches; never a page event).
   */
  broadcast?: string;
  /**
   * With `node`: the page there a page frame is for. A page frame (`event` `$frame`, to a user or a
   * page) is a whole frame of the page protocol in `data`, handed to the page as is.
   */
  page?: string;
  event: string;
  /** JSON text of the data, encoded once by the emitter. */
  data: string;
  /** The same as UTF-8 bytes, for large data: encoded once and shared by every room's frame. */
  dataBytes?: Buffer;
  /** Every room event has one, from the room's rising sequence; presence changes and user events do not. */
  id?: string;
  from?: string;
  /** The page that sent it (page sends), which does not receive its own event. */
  origin?: string;
  /**
   * An ask: to a user (`event`, `data` are the question; the user's pages on every node get it and
   * answer `replyTo`), or an answer to a node (`event` `$reply` with the reply's data, or `$decline`).
   */
  ask?: string;
  /** An ask's node: where its pages' answers go. */
  replyTo?: string;
}

/** A webhook event stored in the same step as a room event: its JSON text, cut where the event's id goes. */
export interface Report {
  before: string;
  after: string;
}

/** What is handed to `Broker.publish`: a publication before it has its id, and what to store with it. */
export interface Outgoing extends Omit<Publication, 'id'> {
  /** Room events: keep it in the room's history under this rule. */
  keep?: HistoryRule;
  /** Room events: the webhook event to store with it (a page send the token reports). */
  report?: Report;
  /** A presence change (`$member.*`): no id, nothing stored, not part of the room's sequence. */
  presence?: true;
}

export type PublicationHandler = (publication: Publication) => void;

/** Ends one subscription; may be called more than once. */
export type Unsubscribe = () => MaybePromise<void>;

/**
 * Fan-out between nodes, and the one step that orders a room: `publish` gives each room event the
 * next id of its room, stores what it keeps (history, reports) and publishes it. Contract:
 * - Stored before published, all or nothing: when `publish` fails (a StoreError) nothing of the
 *   call was stored or published; once a subscriber has an event, a history read finds it.
 * - One step per room: every subscriber, on every node, receives a room's events in id order,
 *   ids strictly rising, whichever node published them.
 * - Publications from one publisher to one user arrive in the order published.
 * - Handlers never touch storage: they hand publications to the hub.
 */
export interface Broker {
  /**
   * Publishes the events in order; answers each one's id (undefined for user events and presence
   * changes) once it is stored and published.
   */
  publish(events: readonly Outgoing[], nowMs: number): MaybePromise<(string | undefined)[]>;
  /**
   * Starts receiving every publication of the given topic (see topicOf). Answers once the
   * subscription is in effect: a publication made after that reaches the handler. Each call is a
   * subscription of its own, even with the same handler; its unsubscribe ends only that one.
   */
  subscribe(topic: string, handler: PublicationHandler): MaybePromise<Unsubscribe>;
  /**
   * Calls the listener when publications may have been missed: the subscriber connection dropped
   * and its subscriptions are in effect again (pages should resume from history). Brokers that
   * cannot miss any (in memory) leave it out. Answers a function that removes the listener.
   */
  onGap?(listener: () => void): () => void;
  close(): MaybePromise<void>;
}

/**
 * Topic of a publication: one per room and one per user, per app, one per node, and one per broadcast
 * name (every node that subscribed). App keys hold no ':'.
 */
export function topicOf(
  app: string,
  target: { room?: string; user?: string; node?: string; broadcast?: string },
): string {
  if (target.room !== undefined) return `r:${app}:${target.room}`;
  if (target.node !== undefined) return `n:${target.node}`;
  if (target.broadcast !== undefined) return `b:${target.broadcast}`;
  return `u:${app}:${target.user ?? ''}`;
}
