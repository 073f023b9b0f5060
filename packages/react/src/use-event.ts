import type { RealtimeClient, Room, RoomEventMeta, UserEventMeta } from '@realtime/browser';
import { useEffect } from 'react';
import { useLatest } from './latest.js';

/** What a room and a client have in common: `on` returns a function that removes the listener. */
interface Listenable {
  on(name: string, listener: (data: unknown, meta: unknown) => void): () => void;
}

/**
 * Listens to a room's event (`*`: all of them; `$member.joined` and the room's other `$` names too)
 * while the component is mounted. The listener may be a new function each render: the newest is
 * called, and the room is not listened to again for it. Without a room (before {@link useRoom} gave
 * one) it listens to nothing.
 *
 * @example
 * const { room } = useRoom('lobby', { token });
 * useEvent(room, 'chat', (data: { text: string }, { from }) => setLines((lines) => [...lines, `${from}: ${data.text}`]));
 */
export function useEvent<T = unknown>(
  room: Room | null | undefined,
  name: string,
  listener: (data: T, meta: RoomEventMeta) => void,
): void;
/**
 * Listens to a user event of the client (sent to this page's user), or its `$error` and `$call`.
 *
 * @example
 * useEvent(useRealtime(), 'notice', (data: string) => toast(data));
 */
export function useEvent<T = unknown>(
  client: RealtimeClient | null | undefined,
  name: string,
  listener: (data: T, meta: UserEventMeta) => void,
): void;
export function useEvent(
  target: Room | RealtimeClient | null | undefined,
  name: string,
  listener: (data: unknown, meta: never) => void,
): void {
  const latest = useLatest(listener as (data: unknown, meta: unknown) => void);
  useEffect(() => {
    if (!target) return;
    return (target as Listenable).on(name, (data, meta) => latest.current(data, meta));
  }, [target, name, latest]);
}
