import { eventNameProblem, isReservedEvent, isSealed, rulesAllow, type SendFrame } from '@realtime/protocol';
import { refreshApp } from '../apps/page-app.js';
import { type SendProblem, SendRefused } from '../core/emit.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { RoomRefusal } from './room-refusal.js';

/** What the page hears of a send the emitter refused. */
const SEND_REFUSALS: Record<SendProblem, () => RoomRefusal> = {
  nested: () => new RoomRefusal('bad_frame', 'data is nested too deeply'),
  too_large: () => new RoomRefusal('too_large', 'data is over 1 MB'),
  not_included: () => new RoomRefusal('not_included', "the app's plan does not include history"),
};

/**
 * A page send: the page is in the room, the event's name, the token's rules and the room's seal;
 * then the emitter (the API emit's) encodes and checks the data and the plan, and one publish
 * stores what it keeps (history when the token keeps sends, the webhook event when its `w` rule
 * matches) and delivers it to the room's other pages; `sent` follows.
 */
export async function sendToRoom(
  deps: Pick<RoomServiceDeps, 'apps' | 'emitter'>,
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
  let id: string;
  try {
    id = await deps.emitter.send({
      app: current,
      room,
      event,
      data: frame.data,
      from: page.user ?? undefined,
      origin: page.id,
      keep: claims.history,
      report: rulesAllow(claims.w, event),
    });
  } catch (error) {
    // Nothing was stored or delivered: the page hears why, for this send.
    if (error instanceof SendRefused) throw SEND_REFUSALS[error.problem]();
    throw error;
  }
  page.send({ t: 'sent', ref, id });
}
