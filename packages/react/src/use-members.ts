import type { Member, Room } from '@realtime/browser';
import { useMemo, useSyncExternalStore } from 'react';
import { membersStore } from './members-store.js';

const NONE: readonly Member[] = [];
const noMembers = (): readonly Member[] => NONE;
const noSubscription = (): (() => void) => () => {};

/**
 * The presence members of a room (each user once), rendering again when one joins or leaves and
 * when the room re-joins after a reconnect. Empty without a room (before {@link useRoom} gave one)
 * and in a room without presence. In a large room, the members fetched so far (`room.moreMembers()`).
 *
 * @example
 * const { room } = useRoom('lobby', { token });
 * const members = useMembers(room);
 * return <ul>{members.map((m) => <li key={m.user}>{m.user}</li>)}</ul>;
 */
export function useMembers(room: Room | null | undefined): readonly Member[] {
  const store = useMemo(() => (room ? membersStore(room) : undefined), [room]);
  const snapshot = store?.snapshot ?? noMembers;
  return useSyncExternalStore(store?.subscribe ?? noSubscription, snapshot, snapshot);
}
