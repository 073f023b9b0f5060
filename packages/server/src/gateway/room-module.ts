import {
  CURSOR_MAX_LENGTH,
  EPOCH_MAX_LENGTH,
  EVENT_ID_PATTERN,
  type JoinFrame,
  type LeaveFrame,
  LIMITS,
  type ListFrame,
  type SendFrame,
} from '@realtime/protocol';
import type { GatewayDeps } from './context.js';
import { frame, type PageModule } from './frame-registry.js';
import { join, leave, list } from './room-frames.js';
import { send } from './send-frame.js';

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

/** Rooms: join (with resume), leave, the member list of large presence rooms, and page sends. */
export function roomModule(deps: GatewayDeps): PageModule {
  return {
    frames: {
      join: frame<JoinFrame>(
        {
          required: { ref: 'ref', room: 'string', token: 'string' },
          optional: { since: 'json', epoch: 'json', last: 'json' },
          check: joinProblem,
        },
        (conn, f) => join(deps, conn, f),
      ),
      leave: frame<LeaveFrame>({ required: { ref: 'ref', room: 'string' } }, (conn, f) => leave(deps, conn, f)),
      list: frame<ListFrame>(
        { required: { ref: 'ref', room: 'string' }, optional: { cursor: 'json' }, check: listProblem },
        (conn, f) => list(deps, conn, f),
      ),
      send: frame<SendFrame>(
        { required: { ref: 'ref', room: 'string', event: 'string' }, optional: { data: 'json' } },
        (conn, f) => send(deps, conn, f),
      ),
    },
  };
}
