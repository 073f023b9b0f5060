import { eventNameProblem, isReservedEvent, isSealed, LIMITS, rulesAllow, type SendFrame } from '@realtime/protocol';
import type { SendEvent } from '../core/events.js';
import { StoreError } from '../engines/store-error.js';
import type { Outgoing } from '../engines/types.js';
import type { Connection } from './connection.js';
import type { GatewayDeps } from './context.js';
import { FrameError } from './frame-registry.js';
import { refreshApp } from './room-frames.js';

/**
 * A page send: the token's rules, the room's seal, then one publish stores what it keeps (history
 * when the token keeps sends, the webhook event when its `w` rule matches) and delivers it; `sent`
 * follows.
 */
export async function send(deps: GatewayDeps, conn: Connection, frame: SendFrame): Promise<void> {
  const { ref, room, event } = frame;
  const membership = conn.rooms.get(room);
  if (!membership) throw new FrameError('not_joined', 'join the room before sending to it', ref, { room });
  const current = await refreshApp(deps, conn);
  if (!current) return;
  const nameProblem = eventNameProblem(event);
  if (nameProblem) throw new FrameError('bad_frame', nameProblem, ref, { room });
  if (isReservedEvent(event))
    throw new FrameError('reserved', 'event names starting with $ are kept for the room', ref, { room });
  const { claims } = membership;
  if (!rulesAllow(claims.send, event)) {
    throw new FrameError(
      'not_allowed',
      `the room token does not allow sending ${JSON.stringify(event).slice(0, 40)}`,
      ref,
      { room },
    );
  }
  if (claims.sealed && !isSealed(frame.data)) {
    throw new FrameError('not_sealed', 'the room is sealed: data must be a sealed value', ref, { room });
  }
  let data: string;
  try {
    data = frame.data === undefined ? 'null' : JSON.stringify(frame.data);
  } catch {
    // JSON.stringify recurses: data nested a million deep overflows the stack.
    throw new FrameError('bad_frame', 'data is nested too deeply', ref, { room });
  }
  if (Buffer.byteLength(data) > LIMITS.dataBytes) throw new FrameError('too_large', 'data is over 1 MB', ref, { room });
  if (claims.history && !current.features.includes('history')) {
    throw new FrameError('not_included', "the app's plan does not include history", ref, { room });
  }

  const app = conn.app.key;
  const from = conn.user ?? undefined;
  const outgoing: Outgoing = { app, room, event, data, origin: conn.id };
  if (from !== undefined) outgoing.from = from;
  if (claims.history) outgoing.keep = claims.history;
  // The webhook event is stored with the send, in the same step: an acknowledged send is never unreported.
  const sendEvent: SendEvent = {
    type: 'emit',
    room,
    event,
    data: frame.data ?? null,
    ...(from === undefined ? {} : { from }),
  };
  const reports = rulesAllow(claims.w, event);
  const report = reports ? deps.events.reportOf(current, sendEvent) : undefined;
  if (report) outgoing.report = report;

  let id: string | undefined;
  try {
    [id] = await deps.broker.publish([outgoing], deps.now());
  } catch (error) {
    // Nothing was stored or delivered: the page hears why, for this send (the console too: the gateway).
    if (error instanceof StoreError) throw new FrameError(error.code, error.message, ref, { room });
    throw error;
  }
  if (id === undefined) throw new TypeError('the broker gave a room event no id');
  if (deps.tap?.watching(app)) {
    deps.tap.record(
      app,
      from === undefined ? { kind: 'send', room, event, data } : { kind: 'send', room, user: from, event, data },
    );
  }
  if (reports) deps.events.reported(app, { ...sendEvent, event_id: id });
  conn.send({ t: 'sent', ref, id });
}
