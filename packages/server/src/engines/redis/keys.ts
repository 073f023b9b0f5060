/**
 * Every key and channel the Redis engine uses, after the client's prefix (default `rt:`):
 * - `gen`: the generation hash (generation.ts);
 * - `{<app>:<room>}:m|s|i|x`: a room's meta, stream, id list and expiry stack (room-lua.ts);
 * - `apps:{apps}`: set of app keys; `app:{apps}:<key>`: one app's hash (apps.ts; one tag, so an
 *   upsert is one slot; the names before, `apps` and `app:<key>`, are adopted at a store's first call);
 * - `wh:{<app>}:waiting`: webhook events waiting for a batch, oldest first; `wh:apps`: apps with
 *   events waiting (webhooks.ts);
 * - `{nodes}:lease|lapsed|lapse|seq`: the one lease of every node and the claims of lapsed nodes
 *   (nodes.ts; one hash tag, so its scripts work in one slot and touch no feature's keys);
 * - `pr:...`: presence (presence.ts names its own keys): a user's `pr:u|o:{<app>:<user>}`, a room's
 *   `pr:r:{<app>:<room>}` and `pr:m:{<app>:<room>}:...`, a node's `pr:n|s|e|f|l|c:{<node>}` and
 *   `pr:g:{<node>}:<page>`, and `pr:nodes` (nodes with presence keys, written at most every 30 s each);
 * - `call:...`: calls between two people (calls.ts: `call:{<app>}:c|u:...` in the app's slot,
 *   `call:ring:{call-ring-<n>}` a few ring zsets, `call:n:{<node>}`);
 * - `group:...`: group calls (groups.ts: `group:{<app>:<group>}:m|o|u`, `group:n:{<node>}`);
 * - `stream:...`: live streams (streams.ts: `stream:{<app>:<stream>}:m|o|s|w`, `stream:n:{<node>}`);
 * - `<feature>:n:{<node>}` (and presence's `pr:n:{<node>}`, `pr:s:{<node>}`): what a node's pages
 *   hold in a feature, kept under the node's hash tag, so the sweep of a dead node (claimed from
 *   `{nodes}`) takes it per node and never reads the lease keys in the same script;
 * - channels: the prefix then the topic (`r:<app>:<room>`, `u:<app>:<user>`, `n:<node>`).
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

/** SCAN pattern of every key of every room of one app (app keys hold no ':', so no other app matches). */
export function appRoomsPattern(prefix: string, app: string): string {
  const glob = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
  return `${glob(prefix)}{${glob(app)}:*}:[msix]`;
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
