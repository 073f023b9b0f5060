/**
 * `@realtime/browser`: the SDK pages use to talk to the realtime service over one WebSocket
 * (docs/protocol.md): rooms with resume and presence, user events, asks, sealing, calls between two people, group
 * calls and live streams.
 *
 * @example
 * import { connect, openWith, parseSealKey } from '@realtime/browser';
 * const client = connect({ url: 'https://rt.example.com', site: 'app1', identity: () => fetchIdentity() });
 * const room = client.join('lobby', { token: () => fetchRoomToken('lobby'), history: 50 });
 * room.on('chat', (data, { from }) => show(from, data));
 */
export type { CloseAdvice, Member } from '@realtime/protocol';
export { CLOSE, closeAdvice, isSealed, roomLabel, userLabel } from '@realtime/protocol';
export type { AskHandler, AskMeta } from './ask.js';
export { Call, type CallEvents } from './calls/call.js';
export { CallError, type CallLocalErrorCode } from './calls/errors.js';
export { IncomingCall, type IncomingCallEvents, type IncomingCallState } from './calls/incoming.js';
export type {
  AcceptOptions,
  CallDirection,
  CallEnd,
  CallEndedReason,
  CallMediaKind,
  CallMediaSource,
  CallOptions,
  CallState,
  RtcOptions,
} from './calls/types.js';
export { type ConnectOptions, connect, RealtimeClient, type UserEventMeta } from './client.js';
export type { BackoffPolicy } from './connection/backoff.js';
export type { Clock, Timers } from './connection/clock.js';
export type { Disconnect, IdentitySource, StateChange } from './connection/connection.js';
export type { ConnectionState } from './connection/states.js';
export type {
  SocketCloseEvent,
  SocketMessageEvent,
  WebSocketConstructor,
  WebSocketLike,
} from './connection/transport.js';
export { type LocalErrorCode, RealtimeSocketError, type RealtimeSocketErrorCode } from './errors.js';
export { GroupError } from './groups/errors.js';
export { Group, type GroupEvents } from './groups/group.js';
export type {
  GroupEnd,
  GroupEndReason,
  GroupMode,
  GroupOptions,
  GroupPeer,
  GroupPeerState,
  GroupSpeaker,
  GroupSpeakers,
  GroupState,
} from './groups/types.js';
export type { OutboxLimits } from './outbox.js';
export {
  type JoinedInfo,
  type JoinOptions,
  type MembersChange,
  Room,
  type RoomEventMeta,
  type RoomStatus,
  type TokenSource,
  type TruncatedInfo,
} from './room.js';
export { openWith, parseSealKey, SEAL_KEY_BYTES, sealWith } from './seal.js';
export { StreamError } from './streams/errors.js';
export { LiveStream, type LiveStreamEvents } from './streams/live-stream.js';
export type { StreamLeave, StreamLiveInfo, StreamOptions, StreamRole, StreamState } from './streams/types.js';
