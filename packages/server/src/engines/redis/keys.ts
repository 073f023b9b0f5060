/**
 * Every key and channel the Redis engine uses, after the client's prefix (default `rt:`):
 * - `gen`: the generation hash (generation.ts);
 * - `{<app>:<room>}:m|s|i|x`: a room's meta, stream, id list and expiry stack (room-lua.ts);
 * - `apps`: set of app keys; `app:<key>`: one app's hash (apps.ts);
 * - `wh:{<app>}:waiting`: webhook events waiting for a batch, oldest first; `wh:apps`: apps with
 *   events waiting (webhooks.ts);
 * - channels: the prefix then the topic (`r:<app>:<room>`, `u:<app>:<user>`).
 * App keys hold no ':' (types.ts), so `{<app>:<room>}` names one room of one app.
 */

/** The four keys of a room, in the order the room scripts take them. */
export function roomKeys(prefix: string, app: string, room: string): [string, string, string, string] {
  const base = `${prefix}{${app}:${room}}`;
  return [`${base}:m`, `${base}:s`, `${base}:i`, `${base}:x`];
}

/** SCAN pattern of every room's expiry stack (the rooms that have kept events). */
export function expiryStackPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}{*}:x`;
}

/** The four keys of the room whose expiry stack is `stack`. */
export function roomKeysOfStack(stack: string): [string, string, string, string] {
  const base = stack.slice(0, -':x'.length);
  return [`${base}:m`, `${base}:s`, `${base}:i`, `${base}:x`];
}

export function waitingKey(prefix: string, app: string): string {
  return `${prefix}wh:{${app}}:waiting`;
}

export function waitingAppsKey(prefix: string): string {
  return `${prefix}wh:apps`;
}

/*
 * Presence (presence.ts), after the prefix; the scripts build the same names in Lua for sweep:
 * - `pr:u:{<app>:<user>}`: set of the user's open pages; `pr:off`: zset of `<app>:<user>` by when
 *   their `user.offline` falls due (users with no page left);
 * - `pr:r:{<app>:<room>}`: set of the pages in the room (occupancy);
 * - `pr:m:{<app>:<room>}:order|info|pages|count|seq`: a presence room's users by join order, their
 *   member JSON, page -> user, pages per user, the join counter;
 * - `pr:nodes`: zset of nodes by lease end; `pr:n:<node>`: set of what the node's pages hold
 *   (JSON arrays), for the sweep of a dead node.
 */

export function userPagesKey(prefix: string, app: string, user: string): string {
  return `${prefix}pr:u:{${app}:${user}}`;
}

export function roomPagesKey(prefix: string, app: string, room: string): string {
  return `${prefix}pr:r:{${app}:${room}}`;
}

/** The five keys of a presence room, in the order the scripts take them: order, info, pages, count, seq. */
export function memberKeys(prefix: string, app: string, room: string): [string, string, string, string, string] {
  const base = `${prefix}pr:m:{${app}:${room}}`;
  return [`${base}:order`, `${base}:info`, `${base}:pages`, `${base}:count`, `${base}:seq`];
}

export function nodePagesKey(prefix: string, node: string): string {
  return `${prefix}pr:n:${node}`;
}
