/**
 * Every key and channel the Redis engine uses, after the client's prefix (default `rt:`):
 * - `gen`: the generation hash (generation.ts);
 * - `{<app>:<room>}:m|s|i|x`: a room's meta, stream, id list and expiry stack (room-lua.ts);
 * - `apps:{apps}`: set of app keys; `app:{apps}:<key>`: one app's hash (apps.ts; one tag, so an
 *   upsert is one slot; the names before, `apps` and `app:<key>`, are adopted at a store's first call);
 * - `{<app>:<room>}:w`: the room's webhook reports (page sends) waiting for a batch, oldest first,
 *   written by the room's publish script in the room's slot; `{<app>:<room>}:w:b`: reports taken for
 *   a batch not yet stored (batch id -> time and texts), so a crash between the two is repaired;
 * - `wh:{<app>}:waiting` (and its claims `wh:{<app>}:waiting:b`): the app's other webhook events
 *   (addEvent), oldest first (webhooks.ts);
 * - `wh:{ix<k>}:apps` and `wh:{ix<k>}:a:<app>` (k < REPORT_INDEX_KEYS): which apps and rooms have
 *   events waiting, the room in index k by a hash of its name, the app's own list as room ''
 *   (report-index.ts); no global key is touched per emit;
 * - `wh:{wh}:...`: the webhook batches, their schedule and counts (one tag: a few writes a second;
 *   webhooks.ts names them);
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
 * - channels: the prefix then the topic (engines/broker.ts topicOf; the room's carries its hash tag).
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

/** A room's webhook reports waiting for a batch (same slot as its four keys). */
export function reportKey(prefix: string, app: string, room: string): string {
  return `${prefix}{${app}:${room}}:w`;
}

/** Reports taken from a waiting list for a batch being stored (same slot as the list). */
export function claimsKeyOf(list: string): string {
  return `${list}:b`;
}

/** The list a claims key belongs to. */
export function listOfClaims(claims: string): string {
  return claims.endsWith(':b') ? claims.slice(0, -2) : claims;
}

/** SCAN pattern of every room's waiting reports. */
export function reportListPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}{*}:w`;
}

/** SCAN pattern of every room's reports taken for a batch not yet stored. */
export function reportClaimsPattern(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}{*}:w:b`;
}

/** SCAN pattern of one app's rooms' report lists. */
export function appReportsPattern(prefix: string, app: string): string {
  const glob = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
  return `${glob(prefix)}{${glob(app)}:*}:w*`;
}

/** How many index keys spread the rooms with reports waiting over the cluster. */
export const REPORT_INDEX_KEYS = 16;

/** Index k of a room: FNV-1a of `<app>:<room>`. */
export function reportIndexOf(app: string, room: string): number {
  let hash = 0x811c9dc5;
  const text = `${app}:${room}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % REPORT_INDEX_KEYS;
}

/** Index k's set of apps with rooms waiting. */
export function reportAppsKey(prefix: string, k: number): string {
  return `${prefix}wh:{ix${k}}:apps`;
}

/** Index k's set of an app's rooms with reports waiting. */
export function reportRoomsKey(prefix: string, k: number, app: string): string {
  return `${prefix}wh:{ix${k}}:a:${app}`;
}

/** The one hash tag of every webhook batch key (batches are formed about once a second per app). */
export function batchKey(prefix: string): string {
  return `${prefix}wh:{wh}`;
}
