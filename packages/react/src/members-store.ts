import type { Member, Room } from '@realtime/browser';
import type { ExternalStore } from './external-store.js';

/** The room events after which its members may differ: each presence change, each (re-)join, a large room's batch. */
const MEMBER_EVENTS = ['$member.joined', '$member.left', '$joined', '$members'] as const;

/**
 * The presence members of `room` as a store: its snapshot is `room.members()`, kept as the same
 * array while no member changed (so React renders again only on a change), read again after each
 * event that may change it. Before a subscription it compares the list each time, since events may
 * come with nobody listening.
 */
export function membersStore(room: Room): ExternalStore<readonly Member[]> {
  let members: readonly Member[] = room.members();
  let subscriptions = 0;
  let stale = false;
  return {
    subscribe(onChange) {
      subscriptions++;
      // Changes between the render and this subscription were not heard: read again once.
      stale = true;
      const offs = MEMBER_EVENTS.map((name) =>
        room.on(name, () => {
          stale = true;
          onChange();
        }),
      );
      return () => {
        subscriptions--;
        for (const off of offs) off();
      };
    },
    snapshot() {
      if (subscriptions > 0 && !stale) return members;
      stale = false;
      const now = room.members();
      if (!sameMembers(now, members)) members = now;
      return members;
    },
  };
}

/** The same member objects in the same order: the room replaces a member's object when it changes. */
function sameMembers(a: readonly Member[], b: readonly Member[]): boolean {
  return a.length === b.length && a.every((member, i) => member === b[i]);
}
