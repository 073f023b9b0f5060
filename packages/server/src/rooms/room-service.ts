import type { JoinFrame, LeaveFrame, ListFrame, SendFrame } from '@realtime/protocol';
import { diagnostics } from '../core/diagnostics.js';
import type { MemberPage } from '../engines/types.js';
import { admit } from './admission.js';
import { type HistoryRead, readHistory } from './history-read.js';
import { joinedFrame } from './joined-frame.js';
import { leaveRoom } from './leave-room.js';
import { drainLive } from './live-drain.js';
import { firstMembers, listMembers } from './member-page.js';
import { joinPresence, publishMember } from './member-presence.js';
import { occupy } from './occupancy.js';
import { replay } from './replay.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { RoomPage } from './room-page.js';
import { RoomRefusal } from './room-refusal.js';
import { sendToRoom } from './room-send.js';
import { takeSeat } from './seat.js';

/**
 * Rooms, the same on every node: a page joins (with a replay of the room's history), leaves, lists a
 * large room's members and sends. What it refuses it throws as a RoomRefusal (a room token that does
 * not hold, as `verifyToken` throws it); a store that fails throws its StoreError.
 */
export class RoomService {
  readonly #deps: RoomServiceDeps;

  constructor(deps: RoomServiceDeps) {
    this.#deps = deps;
  }

  /**
   * join: check the token, take a seat (live frames wait while history is replayed), occupancy,
   * presence, then `joined`, the kept events after `since` (or the last N), and the live frames that waited.
   */
  async join(page: RoomPage, frame: JoinFrame): Promise<void> {
    const deps = this.#deps;
    const { ref, room } = frame;
    const admitted = await admit(deps, page, frame);
    if (!admitted) return;
    const app = page.app.key;
    const { membership, existing } = takeSeat(page, room, admitted.claims);
    let firstOfUser = false;
    let members: MemberPage | undefined;
    let read: HistoryRead;
    try {
      if (!existing) await occupy(deps, app, room, membership.seat);
      firstOfUser = await joinPresence(deps, page, room, membership, existing);
      members = membership.member ? await firstMembers(deps, app, room) : undefined;
      read = await readHistory(deps, admitted.app, frame, existing !== undefined);
    } catch (error) {
      // No seat may stay half-joined, holding live frames nobody will read.
      await leaveRoom(deps, page, room).catch((cleanup: unknown) =>
        deps.log.error({ err: cleanup, page: page.id }, 'leaving a room after a failed join failed'),
      );
      throw error;
    }

    const first = read.first ?? { events: [], remaining: 0, epoch: '' };
    const total = first.events.length + first.remaining;
    page.send(joinedFrame(ref, room, read, total, members, deps.hub.memberScale.threshold));
    if (diagnostics.joined.hasSubscribers) diagnostics.joined.publish({ node: deps.node, app, room, user: page.user });
    // Announced now, before the replay: a page closed during the replay leaves with a matching left.
    if (firstOfUser) {
      try {
        await publishMember(deps, page, room, '$member.joined', members);
      } catch (error) {
        // The page is in: its presence holds; only the announcement (and its webhook event) failed.
        deps.log.error({ err: error, page: page.id }, 'announcing a member failed');
      }
    }
    const replayed = await replay(deps, page, room, first, total);
    if (replayed) drainLive(membership.seat, replayed);
  }

  /** leave: out of the room (seat, presence, occupancy), then `left`. */
  async leave(page: RoomPage, frame: LeaveFrame): Promise<void> {
    if (!page.rooms.has(frame.room)) throw new RoomRefusal('not_joined', 'the page has not joined that room');
    await leaveRoom(this.#deps, page, frame.room);
    page.send({ t: 'left', ref: frame.ref, room: frame.room });
  }

  /** list: a page of a presence room's members. */
  list(page: RoomPage, frame: ListFrame): Promise<void> {
    return listMembers(this.#deps, page, frame);
  }

  /** send: one room event from the page, kept and reported as its token says; `sent` answers it. */
  send(page: RoomPage, frame: SendFrame): Promise<void> {
    return sendToRoom(this.#deps, page, frame);
  }

  /**
   * The page closed: it leaves every room, whatever fails in another (the hub lets go of the page in
   * each). Rejects with the first failure once all were tried.
   */
  async leaveAll(page: RoomPage): Promise<void> {
    let failed: { error: unknown } | undefined;
    for (const room of [...page.rooms.keys()]) {
      try {
        await leaveRoom(this.#deps, page, room);
      } catch (error) {
        failed ??= { error };
      }
    }
    if (failed) throw failed.error;
  }
}
