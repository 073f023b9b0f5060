/**
 * The page protocol (docs/protocol.md): JSON text frames over one WebSocket per page.
 * Every frame is an object with `t`, its type. The browser SDK is the reference client.
 */
import type { CallClientFrame, CallServerFrame } from './calls.js';
import type { GroupClientFrame, GroupServerFrame } from './groups.js';
import type { StreamClientFrame, StreamServerFrame } from './streams.js';

export const PROTOCOL_VERSION = 1;

/** WebSocket path; the app key goes in the query: `?site=<key>`. */
export const SOCKET_PATH = '/service/realtime/socket';

/** A member of a presence room: each user once, however many pages they have in it. */
export interface Member {
  user: string;
  info?: Record<string, unknown>;
}

// Frames a page sends.
export interface HelloFrame {
  t: 'hello';
  v: number;
  /** Identity token (JWT) minted by the customer's server; absent for an anonymous page. */
  identity?: string;
}
export interface JoinFrame {
  t: 'join';
  ref: number;
  room: string;
  token: string;
  /** Resume: every kept event after this id. */
  since?: string;
  /**
   * With `since`: the room's epoch from the `joined` that came before it (at most 64 characters).
   * When it is not the room's epoch now, the room's history was lost meanwhile: `joined` is truncated.
   */
  epoch?: string;
  /** First join: the last N kept events (1 to 1,000). */
  last?: number;
}
/** The longest `epoch` a join may carry. */
export const EPOCH_MAX_LENGTH = 64;
export interface LeaveFrame {
  t: 'leave';
  ref: number;
  room: string;
}
export interface SendFrame {
  t: 'send';
  ref: number;
  room: string;
  event: string;
  data?: unknown;
}
export interface ReplyFrame {
  t: 'reply';
  ask: string;
  data?: unknown;
}
export interface DeclineFrame {
  t: 'decline';
  ask: string;
}
/** Asks for a page of a presence room's members: the first, or the one after `cursor`. */
export interface ListFrame {
  t: 'list';
  ref: number;
  room: string;
  /** The `cursor` of `joined` or of the last `listed`. */
  cursor?: string;
}
/** The longest `cursor` a list frame may carry. */
export const CURSOR_MAX_LENGTH = 64;
export interface PingFrame {
  t: 'ping';
}
export interface PongFrame {
  t: 'pong';
}

export type ClientFrame =
  | HelloFrame
  | JoinFrame
  | LeaveFrame
  | SendFrame
  | ReplyFrame
  | DeclineFrame
  | ListFrame
  | PingFrame
  | PongFrame
  | CallClientFrame
  | GroupClientFrame
  | StreamClientFrame;

// Frames the service sends.
export interface WelcomeFrame {
  t: 'welcome';
  v: number;
  /** The page's user id from its identity; null for an anonymous page. */
  user: string | null;
  /** The service sends a ping this often (ms); a page that hears nothing for twice as long reconnects. */
  heartbeat: number;
}
export interface JoinedFrame {
  t: 'joined';
  ref: number;
  room: string;
  /**
   * Present in a presence room: the members now, each user once. In a large room (over the service's
   * member threshold, 100 by default) only the first of them, with `count` and `cursor`.
   */
  members?: Member[];
  /** Large presence rooms: how many members the room has. */
  count?: number;
  /** Large presence rooms: where the next page of members starts (a `list` frame); absent after the last. */
  cursor?: string;
  /** True when events after `since` were no longer kept: what follows has a gap. */
  truncated?: boolean;
  /**
   * The room's history stream, when the app's plan includes history: ids compare only within one
   * epoch. A page resumes with it (join `epoch`); a new one means the history was lost and restarted.
   */
  epoch?: string;
  /** How many kept events follow, before live ones. */
  replay: number;
}
export interface LeftFrame {
  t: 'left';
  ref: number;
  room: string;
}
export interface SentFrame {
  t: 'sent';
  ref: number;
  /** The id the room gave the event. */
  id: string;
}
/** A room event (with `room` and `id`) or a user event (neither). */
export interface EventFrame {
  t: 'event';
  room?: string;
  id?: string;
  event: string;
  data: unknown;
  /** For page sends: the user who sent it, as their identity vouched. */
  from?: string;
}
/**
 * The member changes of a large presence room over a short window, in one frame: `joined` members
 * (new, or back with new info) and `left` user ids, each user at most once, and the room's count.
 */
export interface MembersFrame {
  t: 'members';
  room: string;
  count?: number;
  joined: Member[];
  left: string[];
}
/** A page of members, answering `list`. */
export interface ListedFrame {
  t: 'listed';
  ref: number;
  room: string;
  members: Member[];
  count: number;
  /** Absent after the last page. */
  cursor?: string;
}
export interface AskFrame {
  t: 'ask';
  ask: string;
  event: string;
  data: unknown;
}
export interface ErrorFrame {
  t: 'error';
  code: SocketErrorCode;
  message: string;
  /** The `ref` of the frame refused, when it had one. */
  ref?: number;
  room?: string;
  /** The call of the frame refused, when it named one. */
  call?: string;
  /** The stream of the frame refused, when it named one. */
  stream?: string;
  /** The group call of the frame refused, when it named one. */
  group?: string;
  /** In a group call in unit mode: the page whose unit refused this page a session (no port, or a bound). */
  from?: string;
}

export type ServerFrame =
  | WelcomeFrame
  | JoinedFrame
  | LeftFrame
  | SentFrame
  | EventFrame
  | MembersFrame
  | ListedFrame
  | AskFrame
  | ErrorFrame
  | PingFrame
  | PongFrame
  | CallServerFrame
  | GroupServerFrame
  | StreamServerFrame;

/** Error codes of error frames. The connection stays open after an error frame. */
export const SOCKET_ERRORS = {
  bad_frame: 'The frame is not JSON, not an object, of an unknown type, or a field is missing or mistyped.',
  bad_room: 'The room name is not accepted.',
  reserved: 'Event names starting with $ are kept for the room itself.',
  bad_token: 'The token is malformed, not signed with this app, or its claims are not valid.',
  token_expired: 'The token has expired.',
  token_revoked: "The token was issued before a revocation of its user's or app's tokens: fetch a fresh one.",
  wrong_room: 'The room token was issued for another room.',
  wrong_user: 'The room token was issued to another user.',
  not_allowed: "The room token's rules do not allow this event.",
  not_joined: 'The page has not joined that room.',
  not_sealed: 'The room is sealed: it takes only sealed data.',
  too_large: 'The data is over 1 MB.',
  not_included: "The app's plan does not include this operation.",
  rate_limited:
    'The page sends too fast, or places calls (or its callee gets them) more often than the invite bounds allow.',
  wrong_call: 'The call token was issued for another call or group call.',
  wrong_stream: 'The stream grant was issued for another stream or role.',
  no_call: "No such call for this page: it ended, or it is not this page's to answer.",
  in_call: 'The user is already in a call.',
  group_full: 'The group call has as many pages as it takes.',
  not_in_group: 'The page is not in that group call, or the page it signals is not.',
  stream_taken: 'The stream has a presenter already.',
  stream_full: 'The stream has as many pages as it takes.',
  not_in_stream: 'The page is not on that stream.',
  storage_full: "The service's storage is full: the send was not stored or delivered.",
  unavailable: 'The service could not store the send: it was not delivered.',
} as const;

export type SocketErrorCode = keyof typeof SOCKET_ERRORS;

/**
 * Close codes, in ranges that tell the client what to do:
 * 4000-4099 stop (do not reconnect), 4100-4199 reconnect, 4200-4299 reconnect after backing off.
 * Standard codes: 1000 closed on purpose (stop), 1009 frame too big (back off), others reconnect.
 */
export const CLOSE = {
  /** stop: the hello frame asked for a protocol version this service does not speak. */
  unsupportedVersion: 4000,
  /** stop: no app has the site key of the URL. */
  unknownSite: 4001,
  /** stop (or reconnect with a fresh identity): the identity token is not valid. */
  badIdentity: 4002,
  /** stop: the first frame was not a valid hello. */
  badHello: 4003,
  /** stop: the app's server disconnected the user (POST /users/{id}/disconnect); do not reconnect by itself. */
  disconnected: 4004,
  /**
   * stop (or reconnect with fresh tokens): the page's identity or a room token was issued before a
   * revocation (POST /tokens/revoke). A client whose tokens come from functions fetches new ones.
   */
  tokenRevoked: 4005,
  /** reconnect: the service is restarting or stopping. */
  shutdown: 4100,
  /** reconnect: no frame came from the page for too long. */
  heartbeatTimeout: 4101,
  /** reconnect: no hello within 10 seconds of connecting. */
  helloTimeout: 4102,
  /** back off: the page did not read its frames fast enough; its queue was full. */
  slowConsumer: 4200,
  /** back off: the page sent too many frames too fast. */
  tooFast: 4201,
} as const;

export type CloseAdvice = 'stop' | 'reconnect' | 'backoff';

/** What a client should do after a close code. */
export function closeAdvice(code: number): CloseAdvice {
  if (code === 1000 || (code >= 4000 && code < 4100)) return 'stop';
  if (code === 1009 || code === 1008 || (code >= 4200 && code < 4300)) return 'backoff';
  return 'reconnect';
}

/** Largest frame a page may send: 1 MB of data plus room for the other fields. */
export const MAX_FRAME_BYTES = 1_048_576 + 16_384;
/** Service ping interval (ms). */
export const HEARTBEAT_MS = 25_000;
