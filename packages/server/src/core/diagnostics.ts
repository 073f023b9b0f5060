import { channel } from 'node:diagnostics_channel';
import type { Member } from '@realtime/protocol';
import type { StoredBatch, TryResult } from '../engines/types.js';
import type { ValidEvent } from './validate.js';

/**
 * What happened on a node, told on `node:diagnostics_channel` channels for whoever listens (the
 * dashboard's live console). A publisher checks `hasSubscribers` before it builds a message, so with
 * nobody listening the hot paths build nothing:
 *
 *     if (diagnostics.sent.hasSubscribers) diagnostics.sent.publish({ node, app, ... });
 *
 * Channels are the process's: every message names its node, as one process may run several servers.
 * A message is told once what it tells went out (published, answered, tried), in the order it happened.
 */

/** A channel whose messages have one shape. */
export interface Diagnostic<M> {
  readonly name: string;
  /** False while nobody listens: then build no message at all. */
  readonly hasSubscribers: boolean;
  publish(message: M): void;
  subscribe(listener: (message: M) => void): void;
  unsubscribe(listener: (message: M) => void): boolean;
}

/** What every message says: where it happened. */
interface Happened {
  /** The node whose part this was. */
  node: string;
  app: string;
}

/** An API emit or batch was published: each event to its rooms and its users. */
export interface EventsEmitted extends Happened {
  events: readonly ValidEvent[];
}

/** A page's send to a room was published. */
export interface EventSent extends Happened {
  room: string;
  event: string;
  /** JSON text, as sent (sealed values stay sealed). */
  data: string;
  /** The sending page's user, when it has one. */
  from: string | undefined;
}

/** A page joined a room (after its `joined`) or left it. */
export interface PageInRoom extends Happened {
  room: string;
  /** The page's user; null for a page without one. */
  user: string | null;
}

/** A member joined or left a presence room (announced to its pages). */
export interface MemberChanged extends Happened {
  type: 'member.joined' | 'member.left';
  room: string;
  member: Member;
}

/** A user came online (first page on any node) or went offline. */
export interface UserChanged extends Happened {
  type: 'user.online' | 'user.offline';
  user: string;
}

/** An ask went to a user's pages, or was refused: too many in flight, or no page of the user is open. */
export interface AskAsked extends Happened {
  user: string;
  event: string;
  /** JSON text of the question's data. */
  data: string;
  refused: 'rate_limited' | 'offline' | undefined;
}

/** What came back to an ask: a page's reply (its data), a page's decline, or its time ran out unanswered. */
export type AskAnswered = Happened & { user: string; event: string } & (
    | { outcome: 'reply'; data: unknown }
    | { outcome: 'declined' | 'timeout' }
  );

/**
 * The app's server acted on users: disconnected one's pages, or revoked tokens of one user or (no
 * `user`) of the whole app issued before `before` (ms). Told by the node that took the request.
 */
export type UsersActed = Happened &
  ({ action: 'disconnect'; user: string } | { action: 'revoke'; user: string | undefined; before: number });

/** A webhook batch was tried: the batch as it stands after the try, and the try's status or error. */
export interface WebhookTried extends Happened {
  batch: StoredBatch;
  kind: 'scheduled' | 'resend';
  result: TryResult;
}

/** A page's join, leave or send was refused with this error code. */
export interface FrameRefused extends Happened {
  frame: 'join' | 'leave' | 'send';
  room: string;
  user: string | null;
  /** The event of a refused send. */
  event: string | undefined;
  code: string;
}

function named<M>(name: string): Diagnostic<M> {
  // One object per name for the whole process: the typed view is the channel itself.
  return channel(name) as unknown as Diagnostic<M>;
}

/** Every channel the service publishes on. */
export const diagnostics = {
  emitted: named<EventsEmitted>('realtime:event.emitted'),
  sent: named<EventSent>('realtime:event.sent'),
  joined: named<PageInRoom>('realtime:page.joined'),
  left: named<PageInRoom>('realtime:page.left'),
  member: named<MemberChanged>('realtime:member.changed'),
  user: named<UserChanged>('realtime:user.changed'),
  asked: named<AskAsked>('realtime:ask.asked'),
  answered: named<AskAnswered>('realtime:ask.answered'),
  webhook: named<WebhookTried>('realtime:webhook.tried'),
  acted: named<UsersActed>('realtime:users.acted'),
  refused: named<FrameRefused>('realtime:frame.refused'),
} as const;

export type Diagnostics = typeof diagnostics;
