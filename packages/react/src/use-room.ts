import type { RealtimeClient, RealtimeSocketError, Room, RoomStatus, TokenSource } from '@realtime/browser';
import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';
import { useRealtime } from './context.js';
import { useLatest } from './latest.js';
import { holdRoom, type RoomLease, type RoomState } from './room-leases.js';

/** Options of {@link useRoom}: the JoinOptions of `@realtime/browser`. */
export interface UseRoomOptions {
  /**
   * The room token, or a function giving one (called on every join and re-join). It may be a new
   * function each render: the newest is used, and the room is not joined again for it.
   */
  token: TokenSource;
  /** On the first join, replay the last `history` kept events (1 to 1,000) before live ones. */
  history?: number | undefined;
}

/** Where the room of {@link useRoom} is: a RoomStatus, or `idle` while no room is asked for (name null). */
export type UseRoomStatus = RoomStatus | 'idle';

/** What {@link useRoom} answers. */
export interface UseRoomResult {
  /** The joined room, to send on and listen to; undefined until the hook joined it (after the first render) and without a name. */
  room: Room | undefined;
  /** `joining` (also while reconnecting), `joined`, `failed` (refused; tried again after a reconnect), `left` (the client closed), or `idle`. */
  status: UseRoomStatus;
  /** Why the room is `failed` (or ended): the service's refusal, such as `not_allowed` or `token_failed`. */
  error: RealtimeSocketError | undefined;
}

const JOINING: RoomState = { status: 'joining', error: undefined };
const IDLE = { status: 'idle', error: undefined } as const;
const joining = (): RoomState => JOINING;
const noSubscription = (): (() => void) => () => {};

/**
 * Joins the room `name` while the component is mounted: leaves it on unmount, and leaves the old
 * room and joins the new one when `name` changes (null or undefined: no room). Components holding
 * the same room share one join; the last to unmount leaves. Re-joins after reconnects are the
 * SDK's (the room resumes where it was). Renders again when the join state changes.
 *
 * @example
 * function Lobby() {
 *   const { room, status } = useRoom('lobby', { token: () => fetch('/rt/room/lobby').then((r) => r.text()) });
 *   useEvent(room, 'chat', (data: { text: string }) => console.log(data.text));
 *   return <button disabled={status !== 'joined'} onClick={() => room?.send('chat', { text: 'hi' })}>Say hi</button>;
 * }
 */
export function useRoom(name: string | null | undefined, options: UseRoomOptions): UseRoomResult {
  const client = useRealtime();
  const latest = useLatest(options);
  const [held, setHeld] = useState<{ client: RealtimeClient; name: string; lease: RoomLease }>();
  useEffect(() => {
    if (name === null || name === undefined) return;
    const lease = holdRoom(client, name, {
      token: () => {
        const { token } = latest.current;
        return typeof token === 'function' ? token() : token;
      },
      history: latest.current.history,
    });
    setHeld({ client, name, lease });
    return () => {
      lease.release();
      setHeld((current) => (current?.lease === lease ? undefined : current));
    };
  }, [client, name, latest]);
  // The lease of an earlier name (or client) is not shown while the effect moves to the new one.
  const lease = held && held.client === client && held.name === name ? held.lease : undefined;
  const subscribe = useCallback(
    (onChange: () => void) => (lease ? lease.subscribe(onChange) : noSubscription()),
    [lease],
  );
  const snapshot = lease ? lease.state : joining;
  const state = useSyncExternalStore(subscribe, snapshot, snapshot);
  if (name === null || name === undefined) return { room: undefined, ...IDLE };
  return { room: lease?.room, status: state.status, error: state.error };
}
