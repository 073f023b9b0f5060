import type { HistoryPage, KeptEvent, PageBound, ResumeResult } from '../engines/types.js';
import { ApiError } from './api-error.js';
import type { ApiRequest, Handler } from './context.js';
import { requireFeature } from './handlers.js';
import { parseQuery } from './query.js';
import {
  type HistoryCursor,
  historyCursor,
  parseHistoryQuery,
  parseMembersQuery,
  parseRoomsQuery,
  roomParam,
  roomsCursor,
} from './room-queries.js';

/**
 * The room reads of the API: occupied rooms, one room's size, a presence room's members and a room's
 * kept events, all counted over every node (the presence and history stores). Checked in this order:
 * the room in the path, the query, no body, then the plan's feature.
 */

/** What one history answer holds at most besides `limit`: about 1 MB of data (a larger single event still comes, alone). */
export const HISTORY_PAGE_BYTES = 1_048_576;

function noBody(request: ApiRequest): void {
  if (request.body.length > 0) throw new ApiError('bad_request', 'GET takes no body');
}

export const rooms: Handler = async (request, deps) => {
  const query = parseRoomsQuery(request.query);
  noBody(request);
  const { prefix, after, limit } = query;
  const listed = await deps.presence.occupiedRooms(request.app.key, {
    limit,
    ...(prefix === undefined ? {} : { prefix }),
    ...(after === undefined ? {} : { after }),
  });
  const answer: Record<string, unknown> = {
    rooms: listed.rooms.map(({ room, pages, members }) => ({ room, pages, users: members })),
  };
  const last = listed.rooms.at(-1);
  if (listed.more && last !== undefined) answer.cursor = roomsCursor(last.room);
  return answer;
};

export const room: Handler = async (request, deps) => {
  const name = roomParam(request.params[0] ?? '');
  parseQuery(request.query, []);
  noBody(request);
  const app = request.app.key;
  const [size, kept] = await Promise.all([
    deps.presence.roomSize(app, name),
    deps.history.count(app, name, deps.now()),
  ]);
  return { room: name, pages: size.pages, users: size.members, kept: kept.count, epoch: kept.epoch };
};

export const members: Handler = async (request, deps) => {
  const name = roomParam(request.params[0] ?? '');
  const { after, limit } = parseMembersQuery(request.query);
  noBody(request);
  requireFeature(request, 'presence', 'members');
  const page = await deps.presence.memberPage(
    request.app.key,
    name,
    after === undefined ? { limit } : { after, limit },
  );
  const answer: Record<string, unknown> = { room: name, count: page.count, members: page.members };
  if (page.cursor !== undefined) answer.cursor = page.cursor;
  return answer;
};

/** A kept event as the API gives it: a page's `event` frame without `t` and `room`, its data as stored (sealed stays sealed). */
function apiEvent(kept: KeptEvent): Record<string, unknown> {
  const event: Record<string, unknown> = { id: kept.id, event: kept.event };
  if (kept.from !== undefined) event.from = kept.from;
  event.data = JSON.parse(kept.data) as unknown;
  return event;
}

export const history: Handler = async (request, deps) => {
  const name = roomParam(request.params[0] ?? '');
  const query = parseHistoryQuery(request.query);
  noBody(request);
  requireFeature(request, 'history', 'history');
  const app = request.app.key;
  const now = deps.now();
  const bound = (events: number): PageBound => ({ events, bytes: HISTORY_PAGE_BYTES });
  let read: HistoryPage | ResumeResult;
  /**
   * A `since` read's first page says what a page's resume would (events after `since` dropped or
   * never kept, or another epoch); a later page, whether the read lost events between pages (dropped
   * by the room's limit or age, or the stream lost). A `last` read or one from the oldest promises
   * only what is kept, and is never truncated on its first page.
   */
  let truncated = false;
  /** Events of a `last` read still to come after this page (none: a read to the newest). */
  let left: number | undefined;
  switch (query.from) {
    case 'last':
      read = await deps.history.last(app, name, query.last, now, bound(query.limit));
      left = read.remaining;
      break;
    case 'since': {
      const resumed = await deps.history.since(app, name, query.since, now, bound(query.limit), query.epoch);
      read = resumed;
      truncated = resumed.truncated;
      break;
    }
    case 'cursor': {
      const cursor = query.cursor;
      const wanted = Math.min(query.limit, cursor.left ?? query.limit);
      const resumed = await deps.history.since(app, name, cursor.after, now, bound(wanted), cursor.epoch);
      read = resumed;
      truncated = resumed.dropped || resumed.epoch !== cursor.epoch;
      if (cursor.left !== undefined) left = Math.min(resumed.remaining, cursor.left - resumed.events.length);
      break;
    }
    default:
      // From the oldest kept event: `0-0` names none.
      read = await deps.history.since(app, name, '0-0', now, bound(query.limit));
  }
  const answer: Record<string, unknown> = {
    room: name,
    epoch: read.epoch,
    truncated,
    events: read.events.map(apiEvent),
  };
  const lastId = read.events.at(-1)?.id;
  const more = left === undefined ? read.remaining > 0 : left > 0;
  if (more && lastId !== undefined) {
    const next: HistoryCursor = { after: lastId, epoch: read.epoch };
    if (left !== undefined) next.left = left;
    answer.cursor = historyCursor(next);
  }
  return answer;
};
