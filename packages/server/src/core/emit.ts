import { type EventIds, type HistoryRule, LIMITS } from '@realtime/protocol';
import { PublishIncomplete } from '../engines/publish-incomplete.js';
import { StoreError } from '../engines/store-error.js';
import type { App, Broker, MaybePromise, Outgoing, OutgoingRoomEvent } from '../engines/types.js';
import { diagnostics } from './diagnostics.js';
import type { EventSink, SendEvent } from './events.js';
import { quote } from './quote.js';
import type { ValidEvent } from './validate.js';

/** Characters of data above which one encoding is shared by the rooms of an emit. */
const SHARE_DATA_ABOVE = 16_384;

/** One room event a page sends: published like an emit, with what a page send adds. */
export interface PageSend {
  /** The app as the store has it now: its plan says whether the room may keep the event. */
  app: App;
  room: string;
  event: string;
  /** The data as the page sent it (none: null), encoded here. */
  data: unknown;
  /** The page's user, when it has one: the event is from them. */
  from?: string | undefined;
  /** The sending page: it gets `sent`, not its own event. */
  origin: string;
  /** The room keeps the event under this rule (the room token's `history`). */
  keep?: HistoryRule | undefined;
  /** The app's webhook gets the send (the room token's `w` rule matched), stored in the same step. */
  report: boolean;
}

/** Why a page's send was refused before anything was stored: the page hears it in its own words. */
export type SendProblem = 'nested' | 'too_large' | 'not_included';

export class SendRefused extends Error {
  readonly problem: SendProblem;
  constructor(problem: SendProblem) {
    super(`the send was refused: ${problem}`);
    this.problem = problem;
  }
}

/** Names shown of the rooms and users an emit did not reach; the rest are counted. */
const NAMES_SHOWN = 10;

/** Where one outgoing publication of an emit goes: the event's index, and its room or user. */
interface Target {
  event: number;
  room?: string;
  user?: string;
}

/**
 * An emit reached some of its rooms (and users) and not others, even after the failed ones were
 * tried again: a StoreError (503 `unavailable`) whose message names what was not reached, so the
 * caller may send the event again to those only. What was reached keeps it.
 */
export class EmitIncomplete extends StoreError {
  constructor(kind: StoreError['kind'], missed: readonly Target[], events: number, cause: unknown) {
    const names = missed
      .slice(0, NAMES_SHOWN)
      .map(
        (target) =>
          `${events > 1 ? `events[${target.event}] ` : ''}${target.room === undefined ? `user ${quote(target.user)}` : `room ${quote(target.room)}`}`,
      );
    if (missed.length > NAMES_SHOWN) names.push(`${missed.length - NAMES_SHOWN} more`);
    super(kind, {
      cause,
      message: `the service could not store part of this: not delivered to ${names.join(', ')}; the other rooms and users have it`,
    });
    this.name = 'EmitIncomplete';
  }
}

/**
 * emit and batch, and a page's send (one publish path): every event of a call goes to the broker in
 * one publish, which stores what the rooms keep and publishes it, giving each room event its id.
 * On one store it is one step (all or nothing: a failed emit delivered nothing, so a retry cannot
 * deliver twice). A sharded store (Redis Cluster) takes each room in a step of its own: when some
 * failed (PublishIncomplete), their events are published once more, and if some still fail the
 * emit answers EmitIncomplete naming them (the rooms that took it keep it).
 * The data's JSON text is shared by every publication of the event.
 */
export class Emitter {
  readonly #node: string;
  readonly #broker: Broker;
  readonly #now: () => number;
  readonly #events: Pick<EventSink, 'reportOf' | 'reported'> | undefined;

  /** `events` takes the webhook events of page sends (an emitter of API emits alone needs none). */
  constructor(deps: {
    /** This node: what it published is told on the diagnostics channels as its own. */
    node: string;
    broker: Broker;
    now: () => number;
    events?: Pick<EventSink, 'reportOf' | 'reported'>;
  }) {
    this.#node = deps.node;
    this.#broker = deps.broker;
    this.#now = deps.now;
    this.#events = deps.events;
  }

  /** Stays synchronous when the broker answers at once: a promise per emit is measurable on the hot path. */
  emit(app: string, event: ValidEvent): MaybePromise<EventIds> {
    const answers = this.emitAll(app, [event]);
    return answers instanceof Promise ? answers.then(first) : first(answers);
  }

  emitAll(app: string, events: readonly ValidEvent[]): MaybePromise<EventIds[]> {
    const outgoing: Outgoing[] = [];
    const targets: Target[] = [];
    for (const [index, event] of events.entries()) {
      // Large data to several rooms: encoded once here, shared by every room's frame.
      const dataBytes =
        event.data.length > SHARE_DATA_ABOVE && event.rooms.length > 1 ? Buffer.from(event.data) : undefined;
      for (const room of event.rooms) {
        const one: OutgoingRoomEvent = { kind: 'room', app, room, event: event.event, data: event.data };
        if (dataBytes) one.dataBytes = dataBytes;
        const keep = event.history.get(room);
        if (keep) one.keep = keep;
        outgoing.push(one);
        targets.push({ event: index, room });
      }
      for (const user of event.users) {
        outgoing.push({ kind: 'user', app, user, event: event.event, data: event.data });
        targets.push({ event: index, user });
      }
    }
    const ids = this.#broker.publish(outgoing, this.#now());
    if (ids instanceof Promise) {
      return ids
        .catch((error: unknown) => this.#again(outgoing, targets, events.length, error))
        .then((known) => {
          if (diagnostics.emitted.hasSubscribers) diagnostics.emitted.publish({ node: this.#node, app, events });
          return answersOf(events, known);
        });
    }
    if (diagnostics.emitted.hasSubscribers) diagnostics.emitted.publish({ node: this.#node, app, events });
    return answersOf(events, ids);
  }

  /**
   * Publishes once more the events a sharded store did not take (their steps stored nothing), and
   * answers every id; throws EmitIncomplete when some are still not taken, any other error as is.
   */
  async #again(
    outgoing: readonly Outgoing[],
    targets: readonly Target[],
    events: number,
    error: unknown,
  ): Promise<(string | undefined)[]> {
    if (!(error instanceof PublishIncomplete)) throw error;
    const ids = [...error.ids];
    let missed = [...error.failed];
    let failure: StoreError = error;
    try {
      const again = await this.#broker.publish(
        missed.map((at) => outgoing[at] as Outgoing),
        this.#now(),
      );
      missed.forEach((at, i) => {
        ids[at] = again[i];
      });
      return ids;
    } catch (retry) {
      if (!(retry instanceof StoreError)) throw retry;
      failure = retry;
      if (retry instanceof PublishIncomplete) {
        missed.forEach((at, i) => {
          ids[at] = retry.ids[i];
        });
        missed = retry.failed.map((i) => missed[i] as number);
      }
    }
    throw new EmitIncomplete(
      failure.kind,
      missed.map((at) => targets[at] as Target),
      events,
      failure,
    );
  }

  /**
   * A page's send: its data encoded and checked (size, and the plan when the room keeps it), then one
   * publish stores what it keeps (history, and the webhook event when it reports) and delivers it to
   * every page of the room but the sender. Answers the event's id. Throws SendRefused before anything
   * is stored; a failed publish (StoreError) stored and delivered nothing.
   */
  send(send: PageSend): MaybePromise<string> {
    let data: string;
    try {
      data = send.data === undefined ? 'null' : JSON.stringify(send.data);
    } catch {
      // JSON.stringify recurses: data nested a million deep overflows the stack.
      throw new SendRefused('nested');
    }
    if (Buffer.byteLength(data) > LIMITS.dataBytes) throw new SendRefused('too_large');
    if (send.keep && !send.app.features.includes('history')) throw new SendRefused('not_included');
    const { room, event, from } = send;
    const app = send.app.key;
    const outgoing: OutgoingRoomEvent = { kind: 'room', app, room, event, data, origin: send.origin };
    if (from !== undefined) outgoing.from = from;
    if (send.keep) outgoing.keep = send.keep;
    const sendEvent: SendEvent = {
      type: 'emit',
      room,
      event,
      data: send.data ?? null,
      ...(from === undefined ? {} : { from }),
    };
    // The webhook event is stored with the send, in the same step: an acknowledged send is never unreported.
    const report = send.report ? this.#events?.reportOf(send.app, sendEvent) : undefined;
    if (report) outgoing.report = report;
    const ids = this.#broker.publish([outgoing], this.#now());
    const sent = ([id]: readonly (string | undefined)[]): string => {
      if (id === undefined) throw new TypeError('the broker gave a room event no id');
      if (diagnostics.sent.hasSubscribers) diagnostics.sent.publish({ node: this.#node, app, room, event, data, from });
      if (send.report) this.#events?.reported(app, { ...sendEvent, event_id: id });
      return id;
    };
    return ids instanceof Promise ? ids.then(sent) : sent(ids);
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
