import type { HistoryRule } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';

/**
 * What travels between nodes, by `kind`: to a room's pages, to a user's pages (an event, a page frame
 * or an ask's question), to one node, or to every node. Each kind has its topic (see topicOf).
 */
export type Publication =
  | RoomEvent
  | UserEvent
  | UserFrame
  | UserClose
  | AskQuestion
  | NodePublication
  | BroadcastPublication;

/** An event to every page in a room. */
export interface RoomEvent {
  kind: 'room';
  app: string;
  room: string;
  event: string;
  /** JSON text of the data, encoded once by the emitter. */
  data: string;
  /** The same as UTF-8 bytes, for large data: encoded once and shared by every room's frame. */
  dataBytes?: Buffer;
  /** From the room's rising sequence; presence changes (`$member.*`) have none. */
  id?: string;
  from?: string;
  /** The page that sent it (page sends), which does not receive its own event. */
  origin?: string;
}

/** An event to every open page of a user (no id: not part of any sequence). */
export interface UserEvent {
  kind: 'user';
  app: string;
  user: string;
  event: string;
  data: string;
  dataBytes?: Buffer;
}

/** A whole frame of the page protocol (a call's ring) for every open page of a user but `except`, as is. */
export interface UserFrame {
  kind: 'user.frame';
  app: string;
  user: string;
  frame: string;
  except?: string;
}

/**
 * Closes every open page of a user, on every node, with a close code of the page protocol (the app's
 * server disconnected the user, or revoked their tokens).
 */
export interface UserClose {
  kind: 'user.close';
  app: string;
  user: string;
  code: number;
  reason: string;
}

/** An ask's question to a user's pages on every node; their answers go to node `replyTo`. */
export interface AskQuestion {
  kind: 'ask';
  app: string;
  user: string;
  ask: string;
  replyTo: string;
  event: string;
  data: string;
}

/** The service's own message to one node (never a page event as such). */
export interface NodePublication {
  kind: 'node';
  node: string;
  app: string;
  message: NodeMessage;
}

/** What a node is told, by `type`. */
export type NodeMessage =
  /** A whole frame of the page protocol for one page there, handed to it as is. */
  | { type: 'page.frame'; page: string; frame: string }
  /** A feature service's message (a viewer's signal for the node of its stream's unit): JSON text. */
  | { type: 'service'; service: string; data: string }
  /** A page's reply to one of the node's asks: the reply's JSON text. */
  | { type: 'ask.reply'; ask: string; data: string }
  /** A page that will not answer one of the node's asks. */
  | { type: 'ask.decline'; ask: string }
  /** A live console entry for the node's consoles: its JSON text. */
  | { type: 'console.entry'; entry: string };

/** The service's own message to every node. */
export interface BroadcastPublication {
  kind: 'broadcast';
  message: BroadcastMessage;
}

/** What every node is told, by `type`. */
export type BroadcastMessage =
  /** Which apps a node's live consoles watch: the announcement's JSON text. */
  | { type: 'console.watch'; announcement: string }
  /** An app was deleted: every node ends its consoles. */
  | { type: 'console.app_gone'; app: string }
  /**
   * Tokens of the app (or of one user) issued before `before` (ms) are revoked: every node updates
   * its cache and closes its pages that hold such tokens.
   */
  | { type: 'tokens.revoked'; app: string; user?: string; before: number };

/** A webhook event stored in the same step as a room event: its JSON text, cut where the event's id goes. */
export interface Report {
  before: string;
  after: string;
}

/** A room event before it has its id, and what to store with it. */
export interface OutgoingRoomEvent extends Omit<RoomEvent, 'id'> {
  /** Keep it in the room's history under this rule. */
  keep?: HistoryRule;
  /** The webhook event to store with it (a page send the token reports). */
  report?: Report;
  /** A presence change (`$member.*`): no id, nothing stored, not part of the room's sequence. */
  presence?: true;
}

/** What is handed to `Broker.publish`: room events before their ids, the other kinds as they go. */
export type Outgoing = OutgoingRoomEvent | Exclude<Publication, RoomEvent>;

export type PublicationHandler = (publication: Publication) => void;

/** Ends one subscription; may be called more than once. */
export type Unsubscribe = () => MaybePromise<void>;

/**
 * Fan-out between nodes, and the one step that orders a room: `publish` gives each room event the
 * next id of its room, stores what it keeps (history, reports) and publishes it. Contract:
 * - Stored before published, all or nothing: when `publish` fails (a StoreError) nothing of the
 *   call was stored or published; once a subscriber has an event, a history read finds it. A
 *   sharded broker (Redis Cluster) is all or nothing per room instead: when some rooms took their
 *   events and others not, it fails with PublishIncomplete (publish-incomplete.ts), which says which.
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
   * and its subscriptions are in effect again (pages should resume from history): with the topics
   * that were cut off when only some were (one shard of a cluster), without when any may have been.
   * Brokers that cannot miss any (in memory) leave it out. Answers a function that removes the listener.
   */
  onGap?(listener: (topics?: readonly string[]) => void): () => void;
  close(): MaybePromise<void>;
}

/**
 * The topic of a room's events. App keys hold no ':'. The braces are a Redis Cluster hash tag: the
 * room's channel lives in the slot of the room's keys (`{<app>:<room>}`), so the room's script can
 * publish it with SPUBLISH; other engines take them as any other character.
 */
export function roomTopic(app: string, room: string): string {
  return `r:{${app}:${room}}`;
}

/** The topic of a user's events, page frames and asks' questions (in the user's slot, `{<app>:<user>}`). */
export function userTopic(app: string, user: string): string {
  return `u:{${app}:${user}}`;
}

/** The topic of one node's messages (in the node's slot, `{<node>}`). */
export function nodeTopic(node: string): string {
  return `n:{${node}}`;
}

/** The one topic of messages to every node (each subscribes once). */
export const BROADCAST_TOPIC = 'b';

/** Where a publication goes: its kind's topic. */
export function topicOf(publication: Publication | Outgoing): string {
  switch (publication.kind) {
    case 'room':
      return roomTopic(publication.app, publication.room);
    case 'user':
    case 'user.frame':
    case 'user.close':
    case 'ask':
      return userTopic(publication.app, publication.user);
    case 'node':
      return nodeTopic(publication.node);
    case 'broadcast':
      return BROADCAST_TOPIC;
  }
}
