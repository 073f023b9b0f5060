import { API_BASE } from '@realtime/protocol';
import type { Handler } from './context.js';
import * as handlers from './handlers.js';
import * as roomReads from './room-handlers.js';
import * as userActions from './user-actions.js';

export interface Route {
  /** A fixed name for logs and metrics (never the path, which holds user ids). */
  name: string;
  method: 'GET' | 'POST';
  /** Matches the path (without query); groups are raw (still percent-encoded) parameters. */
  pattern: RegExp;
  handler: Handler;
}

const base = API_BASE.replaceAll('/', '\\/');
const segment = '([^/]+)';

export const ROUTES: Route[] = [
  { name: 'emit', method: 'POST', pattern: new RegExp(`^${base}\\/emit$`), handler: handlers.emit },
  { name: 'emit_batch', method: 'POST', pattern: new RegExp(`^${base}\\/emit\\/batch$`), handler: handlers.emitBatch },
  { name: 'ask', method: 'POST', pattern: new RegExp(`^${base}\\/users\\/${segment}\\/ask$`), handler: handlers.ask },
  { name: 'online', method: 'GET', pattern: new RegExp(`^${base}\\/online$`), handler: handlers.online },
  // The room reads (room-handlers.ts): occupied rooms, one room, its presence members, its kept events.
  { name: 'rooms', method: 'GET', pattern: new RegExp(`^${base}\\/rooms$`), handler: roomReads.rooms },
  { name: 'room', method: 'GET', pattern: new RegExp(`^${base}\\/rooms\\/${segment}$`), handler: roomReads.room },
  {
    name: 'room_members',
    method: 'GET',
    pattern: new RegExp(`^${base}\\/rooms\\/${segment}\\/members$`),
    handler: roomReads.members,
  },
  {
    name: 'room_history',
    method: 'GET',
    pattern: new RegExp(`^${base}\\/rooms\\/${segment}\\/history$`),
    handler: roomReads.history,
  },
  {
    name: 'webhooks_test',
    method: 'POST',
    pattern: new RegExp(`^${base}\\/webhooks\\/test$`),
    handler: handlers.webhookTest,
  },
  { name: 'webhooks_list', method: 'GET', pattern: new RegExp(`^${base}\\/webhooks$`), handler: handlers.webhookList },
  {
    name: 'webhooks_resend',
    method: 'POST',
    pattern: new RegExp(`^${base}\\/webhooks\\/${segment}\\/resend$`),
    handler: handlers.webhookResend,
  },
  // Acting on users (user-actions.ts).
  {
    name: 'user_disconnect',
    method: 'POST',
    pattern: new RegExp(`^${base}\\/users\\/${segment}\\/disconnect$`),
    handler: userActions.disconnectUser,
  },
  {
    name: 'tokens_revoke',
    method: 'POST',
    pattern: new RegExp(`^${base}\\/tokens\\/revoke$`),
    handler: userActions.revokeTokens,
  },
];

export type RouteMatch = { route: Route; params: string[] } | { allowed: string[] } | undefined;

/** Finds the route of a path: a match, the methods the path takes (for 405), or nothing (404). */
export function matchRoute(method: string, path: string): RouteMatch {
  const allowed: string[] = [];
  for (const route of ROUTES) {
    const found = route.pattern.exec(path);
    if (!found) continue;
    if (route.method === method) return { route, params: found.slice(1) };
    allowed.push(route.method);
  }
  return allowed.length > 0 ? { allowed } : undefined;
}
