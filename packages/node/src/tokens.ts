import {
  type CallClaims,
  type CallMedia,
  callClaimsProblem,
  expiryProblem,
  type HistoryRule,
  identityClaimsProblem,
  isRecord,
  LIMITS,
  type RoomClaims,
  roomClaimsProblem,
  type StreamGrantClaims,
  streamGrantClaimsProblem,
} from '@realtime/protocol';
import { SignJWT } from 'jose';

/** Options of {@link Realtime.identityToken}. */
export interface IdentityTokenOptions {
  /** Shown to presence members: a JSON object of at most 1 KB. */
  info?: Record<string, unknown>;
  /** Lifetime in seconds, at most 86,400 (24 hours); default 3,600. */
  expiresIn?: number;
}

/** Options of {@link Realtime.roomToken}: the room's rules for the page it is given to. */
export interface RoomTokenOptions {
  /** The user it is issued to: only that user's pages can use it. */
  userId?: string;
  /** Event names the page may send to the room (`['*']` for any). */
  send?: string[];
  /** Event names whose page sends are reported to the customer's server by the `emit` webhook. */
  w?: string[];
  /** The page is a presence member of the room. */
  presence?: boolean;
  /** The room takes sealed data only. */
  sealed?: boolean;
  /** `[limit, hours]`: the room keeps page sends. */
  history?: HistoryRule;
  /** Lifetime in seconds, at most 86,400 (24 hours); default 3,600. */
  expiresIn?: number;
}

/** Options of {@link Realtime.callToken} for a call between two people. */
export interface DirectCallTokenOptions {
  /** The user called. */
  to: string;
  /** The customer's own name for the call, reported as the webhook's `call` (room name rules). */
  name?: string;
  group?: never;
  /** What the call may carry: `['audio']` or `['audio', 'video']` (the default). */
  media?: CallMedia;
  /** Lifetime in seconds, at most 86,400 (24 hours); default 3,600. */
  expiresIn?: number;
}

/** Options of {@link Realtime.callToken} for a group call. */
export interface GroupCallTokenOptions {
  /** The group call's name (room name rules), reported as the webhook's `call`. */
  group: string;
  to?: never;
  name?: never;
  /** What the call may carry: `['audio']` or `['audio', 'video']` (the default). */
  media?: CallMedia;
  /** Lifetime in seconds, at most 86,400 (24 hours); default 3,600. */
  expiresIn?: number;
}

/** Options of {@link Realtime.callToken}: `to` for a call between two people, or `group` for a group call. */
export type CallTokenOptions = DirectCallTokenOptions | GroupCallTokenOptions;

/** Options of {@link Realtime.streamGrant}. */
export interface StreamGrantOptions {
  role: 'presenter' | 'viewer';
  /** The user it is issued to; without one the page is a visitor, never reported by webhooks. */
  userId?: string;
  /** Lifetime in seconds, at most 86,400 (24 hours); default 3,600. */
  expiresIn?: number;
}

const DEFAULT_LIFETIME_SECONDS = 3600;

function expiry(expiresIn: number | undefined, nowSeconds: number): number {
  const lifetime = expiresIn ?? DEFAULT_LIFETIME_SECONDS;
  if (!Number.isInteger(lifetime) || lifetime < 1 || lifetime > LIMITS.tokenMaxLifetimeSeconds) {
    throw new TypeError('expiresIn must be a whole number of seconds from 1 to 86400');
  }
  const exp = nowSeconds + lifetime;
  const problem = expiryProblem(exp, nowSeconds);
  if (problem) throw new TypeError(problem);
  return exp;
}

function sign(claims: Record<string, unknown>, key: Uint8Array, nowSeconds: number): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuedAt(nowSeconds).sign(key);
}

/** Mints an identity token (HS256 under the channels key). Throws a TypeError on bad input. */
export function mintIdentityToken(
  channelsKey: Uint8Array,
  userId: string,
  options: IdentityTokenOptions,
  nowSeconds: number,
): Promise<string> {
  const claims: Record<string, unknown> = { sub: userId, exp: expiry(options.expiresIn, nowSeconds) };
  if (options.info !== undefined) claims.info = options.info;
  const problem = identityClaimsProblem(claims);
  if (problem) throw new TypeError(`identity token: ${problem}`);
  return sign(claims, channelsKey, nowSeconds);
}

/** Mints a room token (HS256 under the channels key). Throws a TypeError on bad input. */
export function mintRoomToken(
  channelsKey: Uint8Array,
  room: string,
  options: RoomTokenOptions,
  nowSeconds: number,
): Promise<string> {
  const claims: Partial<RoomClaims> & Record<string, unknown> = { room, exp: expiry(options.expiresIn, nowSeconds) };
  if (options.userId !== undefined) claims.sub = options.userId;
  if (options.send !== undefined) claims.send = options.send;
  if (options.w !== undefined) claims.w = options.w;
  if (options.presence !== undefined) claims.presence = options.presence;
  if (options.sealed !== undefined) claims.sealed = options.sealed;
  if (options.history !== undefined) claims.history = options.history;
  const problem = roomClaimsProblem(claims);
  if (problem) throw new TypeError(`room token: ${problem}`);
  return sign(claims, channelsKey, nowSeconds);
}

/** Mints a call token (HS256 under the calls key). Throws a TypeError on bad input. */
export function mintCallToken(
  callsKey: Uint8Array,
  userId: string,
  options: CallTokenOptions,
  nowSeconds: number,
): Promise<string> {
  if (!isRecord(options)) throw new TypeError('call token: options must be { to } or { group }');
  const claims: Partial<CallClaims> & Record<string, unknown> = { sub: userId };
  // Checked here rather than left to the claims check: `name` or `to` with a group would be dropped.
  if (options.group !== undefined && (options.to !== undefined || options.name !== undefined)) {
    throw new TypeError('call token: give to (and name) for a call between two people, or group, not both');
  }
  if (options.to !== undefined) {
    claims.call = options.name === undefined ? { to: options.to } : { to: options.to, name: options.name };
  } else if (options.name !== undefined) {
    throw new TypeError('call token: name needs to (the user called)');
  }
  if (options.group !== undefined) claims.group = options.group;
  // Default: the call may carry video; the page still chooses what it sends.
  claims.media = options.media ?? ['audio', 'video'];
  claims.exp = expiry(options.expiresIn, nowSeconds);
  const problem = callClaimsProblem(claims);
  if (problem) throw new TypeError(`call token: ${problem}`);
  return sign(claims, callsKey, nowSeconds);
}

/** Mints a stream grant (HS256 under the stream grant key). Throws a TypeError on bad input. */
export function mintStreamGrant(
  streamGrantKey: Uint8Array,
  stream: string,
  options: StreamGrantOptions,
  nowSeconds: number,
): Promise<string> {
  if (!isRecord(options)) throw new TypeError('stream grant: options must be { role, userId? }');
  const claims: Partial<StreamGrantClaims> & Record<string, unknown> = { stream, role: options.role };
  if (options.userId !== undefined) claims.sub = options.userId;
  claims.exp = expiry(options.expiresIn, nowSeconds);
  const problem = streamGrantClaimsProblem(claims);
  if (problem) throw new TypeError(`stream grant: ${problem}`);
  return sign(claims, streamGrantKey, nowSeconds);
}
