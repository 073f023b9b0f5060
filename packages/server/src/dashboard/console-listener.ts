import type { Logger } from 'pino';
import {
  type AskAnswered,
  type AskAsked,
  type Diagnostic,
  diagnostics,
  type EventSent,
  type EventsEmitted,
  type FrameRefused,
  type MemberChanged,
  type PageInRoom,
  type UserChanged,
  type UsersActed,
  type WebhookTried,
} from '../core/diagnostics.js';
import { cutData } from './console-data.js';
import type { Tapped } from './console-entry.js';

/** What the listener hands entries to: the tap, which knows which apps a console watches. */
export interface ConsoleRecorder {
  watching(app: string): boolean;
  record(app: string, tapped: Tapped): void;
}

function emitted(tap: ConsoleRecorder, { app, events }: EventsEmitted): void {
  for (const { rooms, users, event, data: whole } of events) {
    // Cut once for every room: the data may be a megabyte.
    const data = cutData(whole);
    for (const room of rooms) tap.record(app, { kind: 'emit', room, event, data });
    for (const user of users) tap.record(app, { kind: 'emit', user, event, data });
  }
}

function sent(tap: ConsoleRecorder, { app, room, event, data, from }: EventSent): void {
  tap.record(
    app,
    from === undefined ? { kind: 'send', room, event, data } : { kind: 'send', room, user: from, event, data },
  );
}

/** A page's join or leave: with its user when it has one. */
const inRoom =
  (kind: 'join' | 'leave') =>
  (tap: ConsoleRecorder, { app, room, user }: PageInRoom): void => {
    tap.record(app, user === null ? { kind, room } : { kind, room, user });
  };

function member(tap: ConsoleRecorder, { app, type, room, member }: MemberChanged): void {
  tap.record(app, { kind: 'presence', room, user: member.user, event: type, data: JSON.stringify(member) });
}

function user(tap: ConsoleRecorder, { app, type, user }: UserChanged): void {
  tap.record(app, { kind: 'presence', user, event: type });
}

function asked(tap: ConsoleRecorder, { app, user, event, data, refused }: AskAsked): void {
  tap.record(
    app,
    refused === undefined ? { kind: 'ask', user, event, data } : { kind: 'ask', user, event, data, error: refused },
  );
}

function answered(tap: ConsoleRecorder, answer: AskAnswered): void {
  const { app, user, event } = answer;
  tap.record(
    app,
    answer.outcome === 'reply'
      ? { kind: 'reply', user, event, data: JSON.stringify(answer.data) ?? 'null' }
      : { kind: 'reply', user, event, error: answer.outcome },
  );
}

/** The app's server disconnected a user, or revoked tokens (of a user, or of the whole app without one). */
function acted(tap: ConsoleRecorder, message: UsersActed): void {
  if (message.action === 'disconnect') {
    tap.record(message.app, { kind: 'disconnect', user: message.user });
    return;
  }
  const data = JSON.stringify({ before: message.before });
  tap.record(
    message.app,
    message.user === undefined ? { kind: 'revoke', data } : { kind: 'revoke', user: message.user, data },
  );
}

/** A try: its status or error, and which batch, which try, what next. */
function webhook(tap: ConsoleRecorder, { app, batch, kind, result }: WebhookTried): void {
  const data = {
    batch: batch.id,
    events: batch.events,
    try: batch.attempts,
    kind,
    state: batch.state,
    next_at: batch.nextAt,
  };
  const entry: Tapped = { kind: 'webhook', data: JSON.stringify(data), status: result.status };
  if (result.error) entry.error = result.error;
  tap.record(app, entry);
}

function refused(tap: ConsoleRecorder, { app, frame, room, user, event, code }: FrameRefused): void {
  const entry: Tapped = { kind: frame, room, error: code };
  if (user !== null) entry.user = user;
  if (event !== undefined) entry.event = event;
  tap.record(app, entry);
}

/**
 * Listens on the diagnostics channels for what happens on `node` and hands the tap an entry for each
 * happening of an app it watches (built only then). Answers how to stop listening: a node with no
 * console watching anything listens to nothing, so its hot paths build no message.
 */
export function listenForConsole(node: string, tap: ConsoleRecorder, log: Logger): () => void {
  const stops: (() => void)[] = [];
  const on = <M extends { node: string; app: string }>(
    channel: Diagnostic<M>,
    entries: (tap: ConsoleRecorder, message: M) => void,
  ): void => {
    const listener = (message: M): void => {
      if (message.node !== node || !tap.watching(message.app)) return;
      try {
        entries(tap, message);
      } catch (error) {
        // A listener that throws would be an uncaught exception of the hot path that published.
        log.warn({ err: error, app: message.app }, 'the live console failed to take a happening');
      }
    };
    channel.subscribe(listener);
    stops.push(() => channel.unsubscribe(listener));
  };
  on(diagnostics.emitted, emitted);
  on(diagnostics.sent, sent);
  on(diagnostics.joined, inRoom('join'));
  on(diagnostics.left, inRoom('leave'));
  on(diagnostics.member, member);
  on(diagnostics.user, user);
  on(diagnostics.asked, asked);
  on(diagnostics.answered, answered);
  on(diagnostics.webhook, webhook);
  on(diagnostics.refused, refused);
  on(diagnostics.acted, acted);
  return () => {
    for (const stop of stops.splice(0)) stop();
  };
}
