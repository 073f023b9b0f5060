import {
  CLOSE,
  CURSOR_MAX_LENGTH,
  EPOCH_MAX_LENGTH,
  EVENT_ID_PATTERN,
  type JoinFrame,
  type LeaveFrame,
  LIMITS,
  type ListFrame,
  type SendFrame,
} from '@realtime/protocol';
import { diagnostics } from '../core/diagnostics.js';
import { StoreError } from '../engines/store-error.js';
import type { Connection } from '../gateway/connection.js';
import type { GatewayDeps } from '../gateway/context.js';
import { FrameError, frame, type PageModule } from '../gateway/frame-registry.js';
import { TokenError, verifyRoomToken } from '../gateway/tokens.js';
import { RoomRefusal } from './room-refusal.js';
import { RoomService } from './room-service.js';

function joinProblem(value: Record<string, unknown>): string | undefined {
  const { since, last, epoch } = value;
  if (since !== undefined && (typeof since !== 'string' || !EVENT_ID_PATTERN.test(since))) {
    return 'since must be an event id <ms>-<seq>';
  }
  if (last !== undefined) {
    if (typeof last !== 'number' || !Number.isInteger(last) || last < 1 || last > LIMITS.historyMaxEvents) {
      return `last must be a whole number from 1 to ${LIMITS.historyMaxEvents}`;
    }
  }
  if (since !== undefined && last !== undefined) return 'give since or last, not both';
  if (epoch !== undefined) {
    if (typeof epoch !== 'string' || epoch.length > EPOCH_MAX_LENGTH) {
      return `epoch must be a string of at most ${EPOCH_MAX_LENGTH} characters`;
    }
    if (since === undefined) return 'epoch goes with since';
  }
  return undefined;
}

function listProblem(value: Record<string, unknown>): string | undefined {
  const { cursor } = value;
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor.length > CURSOR_MAX_LENGTH)) {
    return `cursor must be a string of at most ${CURSOR_MAX_LENGTH} characters`;
  }
  return undefined;
}

/** A refusal of the room service, a token that does not hold or a store that failed: an error frame naming the frame's ref and room. */
function asFrameError(error: unknown, ref: number, room: string): unknown {
  if (error instanceof RoomRefusal || error instanceof TokenError || error instanceof StoreError) {
    return new FrameError(error.code, error.message, ref, { room });
  }
  return error;
}

type RoomFrame = JoinFrame | LeaveFrame | ListFrame | SendFrame;

/**
 * Runs a room frame; a refused join, leave or send is told on the diagnostics channels with its
 * code. Store failures are mapped here (as the gateway would) so what is told has their code.
 */
async function answer<F extends RoomFrame>(
  deps: GatewayDeps,
  conn: Connection,
  f: F,
  run: () => Promise<void>,
): Promise<void> {
  try {
    await run();
  } catch (thrown) {
    const error = asFrameError(thrown, f.ref, f.room);
    if (error instanceof FrameError && f.t !== 'list' && diagnostics.refused.hasSubscribers) {
      const event = f.t === 'send' ? f.event : undefined;
      diagnostics.refused.publish({
        node: deps.node,
        app: conn.app.key,
        frame: f.t,
        room: f.room,
        user: conn.user,
        event,
        code: error.code,
      });
    }
    throw error;
  }
}

/** The room service of the gateway's dependencies. */
function roomService(deps: GatewayDeps): RoomService {
  return new RoomService({
    node: deps.node,
    apps: deps.apps,
    hub: deps.hub,
    broker: deps.broker,
    history: deps.history,
    presence: deps.presence,
    emitter: deps.emitter,
    departures: deps.departures,
    verifyToken: verifyRoomToken,
    ...(deps.revocations === undefined ? {} : { revocations: deps.revocations }),
    log: deps.log,
    now: deps.now,
  });
}

/**
 * A revocation told while the join ran (after its token was checked, before the page held the room)
 * found no room to close: checked again, from the cache at once, now that the page holds it.
 */
async function keepUnlessRevoked(deps: GatewayDeps, conn: Connection, room: string): Promise<void> {
  const claims = conn.rooms.get(room)?.claims;
  if (!claims || !deps.revocations || conn.state === 'closed') return;
  try {
    const checked = deps.revocations.revoked(conn.app.key, claims.sub, claims);
    if (checked === true || (checked !== false && (await checked))) {
      conn.close(CLOSE.tokenRevoked, 'a room token was issued before a revocation of its tokens');
    }
  } catch (error) {
    // The join was answered already: the token was checked at its start, and this is only the late look.
    deps.log.warn({ err: error, page: conn.id }, 'checking the revocations after a join failed');
  }
}

/** Joins, then keeps the room only while its token is not revoked. */
async function joinRoom(deps: GatewayDeps, rooms: RoomService, conn: Connection, frame: JoinFrame): Promise<void> {
  await rooms.join(conn, frame);
  await keepUnlessRevoked(deps, conn, frame.room);
}

/** One join frame as the room module handles it, for driving a page without a socket (the resume tests). */
export function join(deps: GatewayDeps, conn: Connection, frame: JoinFrame): Promise<void> {
  return answer(deps, conn, frame, () => joinRoom(deps, roomService(deps), conn, frame));
}

/**
 * Rooms: join (with resume), leave, the member list of large presence rooms, and page sends. A page
 * that closes leaves its rooms once every module's `closed` ran.
 */
export function roomModule(deps: GatewayDeps, rooms: RoomService = roomService(deps)): PageModule {
  return {
    frames: {
      join: frame<JoinFrame>(
        {
          required: { ref: 'ref', room: 'string', token: 'string' },
          optional: { since: 'json', epoch: 'json', last: 'json' },
          check: joinProblem,
        },
        (conn, f) => answer(deps, conn, f, () => joinRoom(deps, rooms, conn, f)),
      ),
      leave: frame<LeaveFrame>({ required: { ref: 'ref', room: 'string' } }, (conn, f) =>
        answer(deps, conn, f, () => rooms.leave(conn, f)),
      ),
      list: frame<ListFrame>(
        { required: { ref: 'ref', room: 'string' }, optional: { cursor: 'json' }, check: listProblem },
        (conn, f) => answer(deps, conn, f, () => rooms.list(conn, f)),
      ),
      send: frame<SendFrame>(
        { required: { ref: 'ref', room: 'string', event: 'string' }, optional: { data: 'json' } },
        (conn, f) => answer(deps, conn, f, () => rooms.send(conn, f)),
      ),
    },
    released: (conn) => rooms.leaveAll(conn),
  };
}
