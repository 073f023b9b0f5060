import { eventNameProblem, isReservedEvent, isSealed, LIMITS, rulesAllow, type SendFrame } from '@realtime/protocol';
import { refreshApp } from '../apps/page-app.js';
import type { SendEvent } from '../core/events.js';
import type { Outgoing } from '../engines/types.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { RoomRefusal } from './room-refusal.js';

/**
 * A page send: the token's rules, the room's seal, then one publish stores what it keeps (history
 * when the token keeps sends, the webhook event when its `w` rule matches) and delivers it; `sent`
 * follows.
 */
export async function sendToRoom(
  deps: Pick<RoomServiceDeps, 'apps' | 'broker' | 'events' | 'now' | 'tap'>,
  page: RoomPage,
  frame: Pick<SendFrame, 'ref' | 'room' | 'event' | 'data'>,
): Promise<void> {
  const { ref, room, event } = frame;
  const membership = page.rooms.get(room);
  if (!membership) throw new RoomRefusal('not_joined', 'join the room before sending to it');
  const current = await refreshApp(deps, page);
  if (!current) return;
  const nameProblem = eventNameProblem(event);
  if (nameProblem) throw new RoomRefusal('bad_frame', nameProblem);
  if (isReservedEvent(event)) throw new RoomRefusal('reserved', 'event names starting with $ are kept for the room');
  const { claims } = membership;
  if (!rulesAllow(claims.send, event)) {
    throw new RoomRefusal('not_allowed', `the room token does not allow sending ${JSON.stringify(event).slice(0, 40)}`);
  }
  if (claims.sealed && !isSealed(frame.data)) {
    throw new RoomRefusal('not_sealed', 'the room is sealed: data must be a sealed value');
  }
  let data: string;
  try {
    data = frame.data === undefined ? 'null' : JSON.stringify(frame.data);
  } catch {
    // JSON.stringify recurses: data nested a million deep overflows the stack.
    throw new RoomRefusal('bad_frame', 'data is nested too deeply');
  }
  if (Buffer.byteLength(data) > LIMITS.dataBytes) throw new RoomRefusal('too_large', 'data is over 1 MB');
  if (claims.history && !current.features.includes('history')) {
    throw new RoomRefusal('not_included', "the app's plan does not include history");
  }

  const app = page.app.key;
  const from = page.user ?? undefined;
  const outgoing: Outgoing = { app, room, event, data, origin: page.id };
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

  // Nothing was stored or delivered when this fails: the page hears why, for this send.
  const [id] = await deps.broker.publish([outgoing], deps.now());
  if (id === undefined) throw new TypeError('the broker gave a room event no id');
  if (deps.tap?.watching(app)) {
    deps.tap.record(
      app,
      from === undefined ? { kind: 'send', room, event, data } : { kind: 'send', room, user: from, event, data },
    );
  }
  if (reports) deps.events.reported(app, { ...sendEvent, event_id: id });
  page.send({ t: 'sent', ref, id });
}
