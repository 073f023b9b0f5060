import {
  expiryProblem,
  type HistoryRule,
  identityClaimsProblem,
  LIMITS,
  type RoomClaims,
  roomClaimsProblem,
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

function sign(claims: Record<string, unknown>, channelsKey: Uint8Array, nowSeconds: number): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuedAt(nowSeconds).sign(channelsKey);
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
