import type { Member } from '@realtime/protocol';
import { diagnostics } from '../core/diagnostics.js';
import { memberChangeData } from '../core/member-windows.js';
import type { MemberCount } from '../engines/types.js';
import type { RoomServiceDeps } from './room-deps.js';
import type { Membership, RoomPage } from './room-page.js';

type PresenceDeps = Pick<RoomServiceDeps, 'node' | 'presence' | 'broker' | 'departures' | 'log' | 'now'>;

function memberOf(page: RoomPage): Member {
  const member: Member = { user: page.user ?? '' };
  if (page.info !== undefined) member.info = page.info;
  return member;
}

/**
 * A presence change: recorded for the webhook, then published to the room (no id: not a room event)
 * with the room's count read after it, so every node can tell a large room and its newest count.
 * `count` is the one the caller read already (a join reads a page of members); a leave reads it here.
 */
export async function publishMember(
  deps: PresenceDeps,
  page: RoomPage,
  room: string,
  event: '$member.joined' | '$member.left',
  count?: MemberCount,
): Promise<void> {
  const app = page.app.key;
  const user = page.user ?? '';
  const member = memberOf(page);
  const type = event === '$member.joined' ? 'member.joined' : 'member.left';
  await deps.departures.record(app, { type, room, user });
  let after = count;
  if (after === undefined) {
    try {
      after = await deps.presence.memberCount(app, room);
    } catch (error) {
      // The change still goes out; the pages' count catches up with the room's next change.
      deps.log.error({ err: error, page: page.id }, 'reading a presence room count failed');
    }
  }
  const data = memberChangeData(member, after);
  try {
    await deps.broker.publish([{ kind: 'room', app, room, event, data, presence: true }], deps.now());
  } catch (error) {
    // The change holds in the store; the room's pages on a node cut off from the broker resume on its gap.
    deps.log.error({ err: error, page: page.id }, 'announcing a presence change failed');
    return;
  }
  if (diagnostics.member.hasSubscribers) diagnostics.member.publish({ node: deps.node, app, type, room, member });
}

/**
 * A join's presence: a re-join with a token that is not a presence one stops the page counting as a
 * member (announced at once); a join as a member counts it. Answers whether the page is its user's
 * first in the room (its `member.joined` is announced after `joined`).
 */
export async function joinPresence(
  deps: PresenceDeps,
  page: RoomPage,
  room: string,
  membership: Membership,
  existing: Membership | undefined,
): Promise<boolean> {
  const app = page.app.key;
  if (existing?.member && !membership.member && page.user !== null) {
    if (await deps.presence.leaveRoom(app, room, page.user, page.id)) {
      await publishMember(deps, page, room, '$member.left');
    }
  }
  if (!membership.member || existing?.member) return false;
  return deps.presence.joinRoom(app, room, memberOf(page), page.id);
}

/** The page's presence leaves with the page: its user leaves the room with their last page there. */
export async function leavePresence(
  deps: PresenceDeps,
  page: RoomPage,
  room: string,
  membership: Membership,
): Promise<void> {
  if (!membership.member || page.user === null) return;
  if (await deps.presence.leaveRoom(page.app.key, room, page.user, page.id)) {
    await publishMember(deps, page, room, '$member.left');
  }
}
