import { eventNameProblem, isReservedEvent, isSealed, LIMITS, rulesAllow, type SendFrame } from '@realtime/protocol';
import { StoreError } from '../engines/store-error.js';
import { writeUnitsOf } from '../engines/write-units.js';
import type { Connection } from './connection.js';
import type { GatewayDeps } from './context.js';
import { FrameError } from './frames-in.js';
import { refreshApp } from './room-frames.js';

/**
 * A page send: the token's rules, the room's seal, then what it keeps (history when the token keeps
 * sends, the webhook event when its `w` rule matches) is stored, and only then fan-out and `sent`.
 */
export async function send(deps: GatewayDeps, conn: Connection, frame: SendFrame): Promise<void> {
  const { ref, room, event } = frame;
  const membership = conn.rooms.get(room);
  if (!membership) throw new FrameError('not_joined', 'join the room before sending to it', ref, room);
  const current = await refreshApp(deps, conn);
  if (!current) return;
  const nameProblem = eventNameProblem(event);
  if (nameProblem) throw new FrameError('bad_frame', nameProblem, ref, room);
  if (isReservedEvent(event))
    throw new FrameError('reserved', 'event names starting with $ are kept for the room', ref, room);
  const { claims } = membership;
  if (!rulesAllow(claims.send, event)) {
    throw new FrameError(
      'not_allowed',
      `the room token does not allow sending ${JSON.stringify(event).slice(0, 40)}`,
      ref,
      room,
    );
  }
  if (claims.sealed && !isSealed(frame.data)) {
    throw new FrameError('not_sealed', 'the room is sealed: data must be a sealed value', ref, room);
  }
  let data: string;
  try {
    data = frame.data === undefined ? 'null' : JSON.stringify(frame.data);
  } catch {
    // JSON.stringify recurses: data nested a million deep overflows the stack.
    throw new FrameError('bad_frame', 'data is nested too deeply', ref, room);
  }
  if (Buffer.byteLength(data) > LIMITS.dataBytes) throw new FrameError('too_large', 'data is over 1 MB', ref, room);
  if (claims.history && !current.features.includes('history')) {
    throw new FrameError('not_included', "the app's plan does not include history", ref, room);
  }

  const app = conn.app.key;
  const now = deps.now();
  const from = conn.user ?? undefined;
  const entry = from === undefined ? { event, data } : { event, data, from };
  const keep = claims.history;
  const report = rulesAllow(claims.w, event);
  const issue = () => (keep ? deps.history.append(app, room, entry, keep, now) : deps.history.nextId(app, room, now));
  // Recorded (durably, with a webhook queue) before anyone hears of the send: an acknowledged send is never lost.
  const record = (id: string) =>
    report
      ? deps.events.record(app, {
          type: 'emit',
          room,
          event,
          data: frame.data ?? null,
          ...(from === undefined ? {} : { from }),
          event_id: id,
        })
      : undefined;
  const publish = (id: string): string | Promise<string> => {
    const publication = { app, room, event, data, id, origin: conn.id, ...(from === undefined ? {} : { from }) };
    const published = deps.broker.publish(publication);
    return published instanceof Promise ? published.then(() => id) : id;
  };

  let id: string;
  try {
    const units = writeUnitsOf(deps.history);
    if (units && (keep || report)) {
      // The history append and the webhook event are stored together (all or nothing), then delivered.
      id = await units.run(
        () => {
          const issued = issue();
          if (typeof issued !== 'string') throw new TypeError('write units need a synchronous history store');
          return { id: issued, recorded: record(issued) };
        },
        (stored) => (stored.recorded ? stored.recorded.then(() => publish(stored.id)) : publish(stored.id)),
      );
    } else {
      const issued = issue();
      id = typeof issued === 'string' ? issued : await issued;
      const recorded = record(id);
      if (recorded) await recorded;
      const published = publish(id);
      if (typeof published !== 'string') await published;
    }
  } catch (error) {
    // Nothing was delivered: the page hears why, for this send.
    if (error instanceof StoreError) throw new FrameError(error.code, error.message, ref, room);
    throw error;
  }
  conn.send({ t: 'sent', ref, id });
}
