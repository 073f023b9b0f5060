/**
 * `@realtime/react`: React hooks over `@realtime/browser`. A {@link RealtimeProvider} gives the
 * client; {@link useRoom} joins a room for as long as a component is mounted, {@link useEvent}
 * listens to its events, {@link useMembers} lists who is in it, {@link useConnectionState} says
 * whether the page is connected.
 *
 * @example
 * import { connect } from '@realtime/browser';
 * import { RealtimeProvider, useEvent, useMembers, useRoom } from '@realtime/react';
 *
 * const client = connect({ url: 'https://rt.example.com', site: 'app1', identity: () => fetchIdentity() });
 *
 * function Lobby() {
 *   const { room, status } = useRoom('lobby', { token: () => fetchRoomToken('lobby') });
 *   const members = useMembers(room);
 *   useEvent(room, 'chat', (data, { from }) => console.log(from, data));
 *   return <p>{status}: {members.length} here</p>;
 * }
 *
 * root.render(<RealtimeProvider client={client}><Lobby /></RealtimeProvider>);
 */
export { RealtimeProvider, type RealtimeProviderProps, useRealtime } from './context.js';
export type { RoomState } from './room-leases.js';
export { useConnectionState } from './use-connection-state.js';
export { useEvent } from './use-event.js';
export { useMembers } from './use-members.js';
export { type UseRoomOptions, type UseRoomResult, type UseRoomStatus, useRoom } from './use-room.js';
