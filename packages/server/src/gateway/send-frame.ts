import { eventNameProblem, isReservedEvent, isSealed, LIMITS, rulesAllow, type SendFrame } from '@realtime/protocol';
import type { Connection } from './connection.js';
import type { GatewayDeps } from './context.js';
import { FrameError } from './frames-in.js';
import { refreshApp } from './room-frames.js';

/** A page send: the token's rules, the room's seal, then history (when the token keeps sends) and fan-out. */
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
  const issued = claims.history
    ? deps.history.append(app, room, entry, claims.history, now)
    : deps.history.nextId(app, room, now);
  const id = issued instanceof Promise ? await issued : issued;
  const publication = { app, room, event, data, id, origin: conn.id, ...(from === undefined ? {} : { from }) };
  const published = deps.broker.publish(publication);
  if (published instanceof Promise) await published;
  // Recorded (durably, with a webhook queue) before the page hears `sent`: an acknowledged send is never lost.
  if (rulesAllow(claims.w, event)) {
    deps.events.record(app, {
      type: 'emit',
      room,
      event,
      data: frame.data ?? null,
      ...(from === undefined ? {} : { from }),
      event_id: id,
    });
  }
  conn.send({ t: 'sent', ref, id });
}
