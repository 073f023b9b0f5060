import {
  CLOSE,
  type JoinFrame,
  type LeaveFrame,
  type ListFrame,
  type Member,
  roomNameProblem,
} from '@realtime/protocol';
import type { Tapped } from '../core/console-tap.js';
import type { AppEvent } from '../core/events.js';
import { encodeEvent } from '../core/frame-encoder.js';
import { memberChangeData } from '../core/member-windows.js';
import type { Frame } from '../core/ws-frame.js';
import { StoreError } from '../engines/store-error.js';
import type {
  App,
  HistoryPage,
  KeptEvent,
  MemberCount,
  MemberPage,
  PageBound,
  Publication,
  ResumeResult,
} from '../engines/types.js';
import type { Connection, Membership } from './connection.js';
import type { GatewayDeps } from './context.js';
import { FrameError } from './frame-registry.js';
import { TokenError, verifyRoomToken } from './tokens.js';

/**
 * One page of a replay: what the service holds of a room's history per joining page at a time. A
 * page that does not read keeps at most this (and its bounded queue) in memory, never the room.
 */
export const REPLAY_PAGE: Readonly<PageBound> = { events: 256, bytes: 1_048_576 };

/** Large data is encoded once into its own buffer, not first joined to the frame's text (one copy less). */
const LARGE_DATA = 64 * 1024;

/** A kept event's frame: the same encoding as a live one (the hub's), so a page cannot tell them apart. */
function keptFrame(app: string, room: string, kept: KeptEvent): Frame {
  const publication: Publication = { app, room, id: kept.id, event: kept.event, data: kept.data };
  if (kept.from !== undefined) publication.from = kept.from;
  if (kept.data.length > LARGE_DATA) publication.dataBytes = Buffer.from(kept.data);
  return encodeEvent(publication);
}

/**
 * Records a webhook event of a page's life (room.*, member.*): one the store did not take is tried
 * again until it is (in order), and the page's own operation goes on meanwhile.
 */
function recordLife(deps: GatewayDeps, conn: Connection, event: AppEvent): Promise<void> {
  return deps.departures.record(conn.app.key, event);
}

/**
 * A presence change: recorded for the webhook, then published to the room (no id: not a room event)
 * with the room's count read after it, so every node can tell a large room and its newest count.
 * `count` is the one the caller read already (a join reads a page of members); a leave reads it here.
 */
async function publishMember(
  deps: GatewayDeps,
  conn: Connection,
  room: string,
  event: '$member.joined' | '$member.left',
  count?: MemberCount,
): Promise<void> {
  const app = conn.app.key;
  const user = conn.user ?? '';
  const member: Member = { user };
  if (conn.info !== undefined) member.info = conn.info;
  await recordLife(deps, conn, { type: event === '$member.joined' ? 'member.joined' : 'member.left', room, user });
  let after = count;
  if (after === undefined) {
    try {
      after = await deps.presence.memberCount(app, room);
    } catch (error) {
      // The change still goes out; the pages' count catches up with the room's next change.
      deps.log.error({ err: error, page: conn.id }, 'reading a presence room count failed');
    }
  }
  const data = memberChangeData(member, after);
  try {
    await deps.broker.publish([{ app, room, event, data, presence: true }], deps.now());
  } catch (error) {
    // The change holds in the store; the room's pages on a node cut off from the broker resume on its gap.
    deps.log.error({ err: error, page: conn.id }, 'announcing a presence change failed');
    return;
  }
  if (deps.tap?.watching(app)) {
    const change = event === '$member.joined' ? 'member.joined' : 'member.left';
    deps.tap.record(app, { kind: 'presence', room, user, event: change, data: JSON.stringify(member) });
  }
}

/**
 * The page's app as the store has it now (cached for a second): a rotated secret or a changed plan
 * applies to open pages too. An app that is gone closes the page.
 */
export async function refreshApp(deps: GatewayDeps, conn: Connection): Promise<App | undefined> {
  const app = await deps.apps.get(conn.app.key);
  if (!app) {
    conn.close(CLOSE.unknownSite, 'the app is gone');
    return undefined;
  }
  conn.app = app;
  return app;
}

/**
 * join: check the token, take a seat (live frames wait while history is replayed), presence,
 * then `joined`, the kept events after `since` (or the last N), and the live frames that waited.
 */
export async function join(deps: GatewayDeps, conn: Connection, frame: JoinFrame): Promise<void> {
  const { ref, room } = frame;
  const roomProblem = roomNameProblem(room);
  if (roomProblem) throw new FrameError('bad_room', roomProblem, ref, { room });
  const current = await refreshApp(deps, conn);
  if (!current) return;
  let claims: Membership['claims'];
  try {
    claims = await verifyRoomToken(frame.token, current.secret, deps.now());
  } catch (error) {
    if (error instanceof TokenError) throw new FrameError(error.code, error.message, ref, { room });
    throw error;
  }
  if (claims.room !== room)
    throw new FrameError('wrong_room', 'the room token was issued for another room', ref, { room });
  if (claims.sub !== undefined && claims.sub !== conn.user) {
    throw new FrameError('wrong_user', 'the room token was issued to another user', ref, { room });
  }
  const features = current.features;
  if (claims.presence && !features.includes('presence')) {
    throw new FrameError('not_included', "the app's plan does not include presence", ref, { room });
  }
  if (conn.state === 'closed') return;

  const app = conn.app.key;
  const existing = conn.rooms.get(room);
  const seat = existing?.seat ?? { page: conn, replay: [], replayBytes: 0 };
  if (existing) {
    seat.replay = [];
    seat.replayBytes = 0;
  }
  const member = claims.presence === true && conn.user !== null;
  const membership: Membership = { seat, claims, member };
  conn.rooms.set(room, membership);

  let first: HistoryPage | undefined;
  let truncated = false;
  let members: MemberPage | undefined;
  let firstOfUser = false;
  try {
    if (!existing) {
      // Subscribed (confirmed by the broker) before history is read: nothing published in between is lost.
      await deps.hub.addSeat(app, room, seat);
      if (await deps.presence.enterRoom(app, room, conn.id))
        await recordLife(deps, conn, { type: 'room.occupied', room });
    }
    if (existing?.member && !member && conn.user !== null) {
      // Re-joined with a token that is not a presence one: the page stops counting as a member.
      if (await deps.presence.leaveRoom(app, room, conn.user, conn.id)) {
        await publishMember(deps, conn, room, '$member.left');
      }
    }
    if (member && !existing?.member) {
      const joinedAs: Member = { user: conn.user ?? '' };
      if (conn.info !== undefined) joinedAs.info = conn.info;
      firstOfUser = await deps.presence.joinRoom(app, room, joinedAs, conn.id);
    }
    // Up to the threshold: a small room's whole list; beyond it, its first page.
    const threshold = deps.hub.memberScale.threshold;
    members = member ? await deps.presence.memberPage(app, room, { limit: threshold }) : undefined;
    if (members && members.count > threshold) deps.hub.largeRoom(app, room, members);

    const now = deps.now();
    if (!features.includes('history')) {
      // Rooms keep nothing on this plan: a page resuming may have missed events and none can come back.
      truncated = frame.since !== undefined;
    } else if (frame.since !== undefined) {
      const result = await deps.history.since(app, room, frame.since, now, REPLAY_PAGE, frame.epoch);
      first = result;
      truncated = result.truncated;
    } else {
      // A first join learns the room's epoch too, to resume with later.
      first = await deps.history.last(
        app,
        room,
        frame.last !== undefined && !existing ? frame.last : 0,
        now,
        REPLAY_PAGE,
      );
    }
  } catch (error) {
    // No seat may stay half-joined, holding live frames nobody will read.
    await leaveRoom(deps, conn, room).catch((cleanup: unknown) =>
      deps.log.error({ err: cleanup, page: conn.id }, 'leaving a room after a failed join failed'),
    );
    if (error instanceof StoreError) throw new FrameError(error.code, error.message, ref, { room });
    throw error;
  }

  const read = first ?? { events: [], remaining: 0, epoch: '' };
  const total = read.events.length + read.remaining;
  const joined: Record<string, unknown> = { t: 'joined', ref, room, replay: total };
  if (first) joined.epoch = first.epoch;
  if (members) {
    joined.members = members.members;
    if (members.count > deps.hub.memberScale.threshold) {
      joined.count = members.count;
      if (members.cursor !== undefined) joined.cursor = members.cursor;
    }
  }
  if (truncated) joined.truncated = true;
  conn.send(joined);
  if (deps.tap?.watching(app)) deps.tap.record(app, tappedPage(conn, 'join', room));
  // Announced now, before the replay: a page closed during the replay leaves with a matching left.
  if (firstOfUser) {
    try {
      await publishMember(deps, conn, room, '$member.joined', members);
    } catch (error) {
      // The page is in: its presence holds; only the announcement (and its webhook event) failed.
      deps.log.error({ err: error, page: conn.id }, 'announcing a member failed');
    }
  }
  const replayed = await replay(deps, conn, room, read, total);
  if (!replayed) return;
  // Live frames that came during the replay, in order; the ones the replay already carried are dropped.
  for (;;) {
    const waiting = seat.replay ?? [];
    seat.replay = [];
    if (waiting.length === 0) break;
    for (const live of waiting) {
      if (live.id === undefined || !replayed.has(live.id)) conn.deliver(live.frame);
    }
  }
  seat.replay = undefined;
  seat.replayBytes = 0;
  // Live frames of replayed events may still be on their way: the hub drops them (Seat.replayed).
  let newest: string | undefined;
  for (const id of replayed) newest = id;
  seat.replayed = newest === undefined ? undefined : { ids: replayed, newest };
}

/** A page's join or leave as the live console shows it. */
export function tappedPage(conn: Connection, kind: 'join' | 'leave', room: string): Tapped {
  return conn.user === null ? { kind, room } : { kind, room, user: conn.user };
}

/** Read through a function: the compiler would keep a narrowing of `conn.state` across awaits. */
function isClosed(conn: Connection): boolean {
  return conn.state === 'closed';
}

/**
 * Sends a room's kept events at the page's pace, one page of history at a time: the read's `first`
 * page, then `since` the last one sent, until `total` went (the count `joined` announced). Returns
 * the ids sent, for dropping the live frames the replay already carried; undefined once the page closed.
 */
async function replay(
  deps: GatewayDeps,
  conn: Connection,
  room: string,
  first: HistoryPage,
  total: number,
): Promise<Set<string> | undefined> {
  const sent = new Set<string>();
  let page = first.events;
  // Only `page` holds the events: each page is garbage once sent, so a replay holds one at a time.
  first.events = [];
  let last: string | undefined;
  for (;;) {
    for (const event of page) {
      // Waits while the page's queue is over half full; a page that does not read is closed (4200).
      await conn.paced();
      if (isClosed(conn)) return undefined;
      conn.deliver(keptFrame(conn.app.key, room, event));
      sent.add(event.id);
      last = event.id;
    }
    page = [];
    const left = total - sent.size;
    if (left <= 0 || last === undefined) return sent;
    let next: ResumeResult;
    try {
      next = await deps.history.since(
        conn.app.key,
        room,
        last,
        deps.now(),
        { ...REPLAY_PAGE, events: Math.min(REPLAY_PAGE.events, left) },
        first.epoch,
      );
    } catch (error) {
      // Half a replay cannot be finished without a gap: the page reconnects and resumes from its last id.
      conn.close(1011, 'the room history could not be read');
      throw error;
    }
    if (isClosed(conn)) return undefined;
    if (next.dropped || next.epoch !== first.epoch) {
      // The room's limit or age overtook the page while it read (it could not keep up), or the room's
      // stream was lost under it: closed (4200), it resumes from its last id and learns of the gap
      // from `truncated`.
      conn.slow();
      return undefined;
    }
    if (next.events.length === 0) return sent;
    page = next.events;
  }
}

/** Takes a page out of a room: its seat, and its presence (a user leaves with their last page). */
export async function leaveRoom(deps: GatewayDeps, conn: Connection, room: string): Promise<void> {
  const membership = conn.rooms.get(room);
  if (!membership) return;
  conn.rooms.delete(room);
  const app = conn.app.key;
  if (deps.tap?.watching(app)) deps.tap.record(app, tappedPage(conn, 'leave', room));
  await deps.hub.removeSeat(app, room, membership.seat);
  if (membership.member && conn.user !== null) {
    if (await deps.presence.leaveRoom(app, room, conn.user, conn.id))
      await publishMember(deps, conn, room, '$member.left');
  }
  if (await deps.presence.exitRoom(app, room, conn.id)) await recordLife(deps, conn, { type: 'room.vacated', room });
}

/** list: a page of a presence room's members, after the frame's cursor (none: the first page). */
export async function list(deps: GatewayDeps, conn: Connection, frame: ListFrame): Promise<void> {
  const { ref, room } = frame;
  if (!conn.rooms.has(room)) throw new FrameError('not_joined', 'the page has not joined that room', ref, { room });
  const limit = deps.hub.memberScale.pageSize;
  let page: MemberPage;
  try {
    page = await deps.presence.memberPage(
      conn.app.key,
      room,
      frame.cursor === undefined ? { limit } : { after: frame.cursor, limit },
    );
  } catch (error) {
    if (error instanceof StoreError) throw new FrameError(error.code, error.message, ref, { room });
    throw error;
  }
  const listed: Record<string, unknown> = { t: 'listed', ref, room, members: page.members, count: page.count };
  if (page.cursor !== undefined) listed.cursor = page.cursor;
  conn.send(listed);
}

export async function leave(deps: GatewayDeps, conn: Connection, frame: LeaveFrame): Promise<void> {
  if (!conn.rooms.has(frame.room)) {
    throw new FrameError('not_joined', 'the page has not joined that room', frame.ref, { room: frame.room });
  }
  await leaveRoom(deps, conn, frame.room);
  conn.send({ t: 'left', ref: frame.ref, room: frame.room });
}
