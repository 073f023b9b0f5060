import { LIMITS } from './limits.js';
import { eventNameProblem, roomNameProblem, userIdProblem } from './names.js';
import { isRecord } from './records.js';
import type { HistoryRule } from './wire.js';

/** Claims of an identity token (channels key): who the page's user is. */
export interface IdentityClaims {
  sub: string;
  info?: Record<string, unknown>;
  /** When it was issued (seconds): revocations (POST /tokens/revoke) refuse tokens issued before theirs. */
  iat?: number;
  exp: number;
}

/** Claims of a room token (channels key): what a page may do in one room. */
export interface RoomClaims {
  room: string;
  /** The user it was issued to; the page's identity must match when present. */
  sub?: string;
  /** Event names the page may send (`["*"]`: any). */
  send?: string[];
  /** Event names whose page sends are reported by the `emit` webhook. */
  w?: string[];
  presence?: boolean;
  sealed?: boolean;
  /** `[limit, hours]`: the room keeps page sends. */
  history?: HistoryRule;
  /** When it was issued (seconds): revocations (POST /tokens/revoke) refuse tokens issued before theirs. */
  iat?: number;
  exp: number;
}

/** `exp` is required and at most 24 hours ahead (plus leeway). Returns a problem or undefined. */
export function expiryProblem(exp: unknown, nowSeconds: number): string | undefined {
  if (typeof exp !== 'number' || !Number.isFinite(exp)) return 'exp is required';
  if (exp > nowSeconds + LIMITS.tokenMaxLifetimeSeconds + LIMITS.tokenLeewaySeconds) {
    return 'exp is more than 24 hours ahead';
  }
  return undefined;
}

function eventList(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return `${name} must be an array of event names`;
  for (const item of value) {
    if (typeof item !== 'string') return `${name} must be an array of event names`;
    const problem = item === '*' ? undefined : eventNameProblem(item);
    if (problem) return `${name}: ${problem}`;
  }
  return undefined;
}

/** Checks identity claims (signature and expiry are checked by the JWT library). */
export function identityClaimsProblem(payload: unknown): string | undefined {
  if (!isRecord(payload)) return 'the claims are not an object';
  // Both kinds share the channels key: a room token must not pass for an identity.
  if (payload.room !== undefined) return 'this is a room token, not an identity';
  if (typeof payload.sub !== 'string') return 'sub (the user id) is required';
  const userProblem = userIdProblem(payload.sub);
  if (userProblem) return `sub: ${userProblem}`;
  if (payload.info !== undefined) {
    if (!isRecord(payload.info)) return 'info must be a JSON object';
    if (new TextEncoder().encode(JSON.stringify(payload.info)).length > LIMITS.identityInfoBytes) {
      return 'info is over 1 KB';
    }
  }
  return undefined;
}

/** Checks room token claims. */
export function roomClaimsProblem(payload: unknown): string | undefined {
  if (!isRecord(payload)) return 'the claims are not an object';
  if (typeof payload.room !== 'string') return 'room is required';
  const roomProblem = roomNameProblem(payload.room);
  if (roomProblem) return `room: ${roomProblem}`;
  if (payload.sub !== undefined) {
    if (typeof payload.sub !== 'string') return 'sub must be a user id';
    const userProblem = userIdProblem(payload.sub);
    if (userProblem) return `sub: ${userProblem}`;
  }
  const listProblem = eventList(payload.send, 'send') ?? eventList(payload.w, 'w');
  if (listProblem) return listProblem;
  if (payload.presence !== undefined && typeof payload.presence !== 'boolean') return 'presence must be a boolean';
  if (payload.sealed !== undefined && typeof payload.sealed !== 'boolean') return 'sealed must be a boolean';
  if (payload.history !== undefined) {
    const rule = payload.history;
    if (!Array.isArray(rule) || rule.length !== 2) return 'history must be [limit, hours]';
    const [limit, hours] = rule as unknown[];
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIMITS.historyMaxEvents) {
      return 'history limit must be a whole number from 1 to 1000';
    }
    if (typeof hours !== 'number' || !(hours > 0) || hours > LIMITS.historyMaxHours) {
      return 'history hours must be above 0 and at most 168';
    }
  }
  return undefined;
}

/** Whether a rule list (`send`, `w`) covers an event name. */
export function rulesAllow(list: readonly string[] | undefined, event: string): boolean {
  return list !== undefined && (list.includes('*') || list.includes(event));
}

/** Kinds of media a call token allows: audio, or audio and video. */
export type CallMedia = ['audio'] | ['audio', 'video'];

/**
 * Claims of a call token (calls key): who the page's user is and what call they may make. Exactly
 * one of `call` (a call between two people) and `group` (a group call by name).
 */
export interface CallClaims {
  sub: string;
  /** A call to `to`; `name`, when given, is the customer's own name for it (the webhook's `call`). */
  call?: { to: string; name?: string };
  /** The group call's name (the webhook's `call`). */
  group?: string;
  media: CallMedia;
  exp: number;
}

/** Claims of a stream grant (stream grant key). Without `sub` the page is a visitor, never reported. */
export interface StreamGrantClaims {
  stream: string;
  role: 'presenter' | 'viewer';
  sub?: string;
  exp: number;
}

function mediaProblem(media: unknown): string | undefined {
  if (!Array.isArray(media)) return 'media must be ["audio"] or ["audio","video"]';
  const [first, second, ...rest] = media as unknown[];
  const ok = first === 'audio' && rest.length === 0 && (second === undefined || second === 'video');
  return ok ? undefined : 'media must be ["audio"] or ["audio","video"]';
}

/** Checks call token claims (signature and expiry are checked by the JWT library). */
export function callClaimsProblem(payload: unknown): string | undefined {
  if (!isRecord(payload)) return 'the claims are not an object';
  if (typeof payload.sub !== 'string') return 'sub (the user id) is required';
  const userProblem = userIdProblem(payload.sub);
  if (userProblem) return `sub: ${userProblem}`;
  if ((payload.call === undefined) === (payload.group === undefined)) return 'give call or group, not both';
  if (payload.call !== undefined) {
    const call = payload.call;
    if (!isRecord(call) || typeof call.to !== 'string') return 'call must be { "to": <user id> }';
    const toProblem = userIdProblem(call.to);
    if (toProblem) return `call.to: ${toProblem}`;
    if (call.to === payload.sub) return 'call.to is the caller: a user cannot call themselves';
    if (call.name !== undefined) {
      if (typeof call.name !== 'string') return 'call.name must be a string';
      const nameProblem = roomNameProblem(call.name);
      if (nameProblem) return `call.name: ${nameProblem.replace('room name', 'name')}`;
    }
  }
  if (payload.group !== undefined) {
    if (typeof payload.group !== 'string') return 'group must be a group call name';
    const groupProblem = roomNameProblem(payload.group);
    if (groupProblem) return `group: ${groupProblem.replace('room name', 'group name')}`;
  }
  return mediaProblem(payload.media);
}

/** Checks stream grant claims. */
export function streamGrantClaimsProblem(payload: unknown): string | undefined {
  if (!isRecord(payload)) return 'the claims are not an object';
  if (typeof payload.stream !== 'string') return 'stream (the stream name) is required';
  const streamProblem = roomNameProblem(payload.stream);
  if (streamProblem) return `stream: ${streamProblem.replace('room name', 'stream name')}`;
  if (payload.role !== 'presenter' && payload.role !== 'viewer') return 'role must be "presenter" or "viewer"';
  if (payload.sub !== undefined) {
    if (typeof payload.sub !== 'string') return 'sub must be a user id';
    const userProblem = userIdProblem(payload.sub);
    if (userProblem) return `sub: ${userProblem}`;
  }
  return undefined;
}
