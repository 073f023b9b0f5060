import { LIMITS, type Member } from '@realtime/protocol';
import calculateSlot from 'cluster-key-slot';
import { compareNames } from '../name-order.js';
import { nodeOfPage } from '../node-id.js';
import type {
  Departure,
  GoneUser,
  MemberCount,
  MemberPage,
  NameRange,
  NodeClaim,
  OccupiedRoom,
  OnlineUser,
  PresenceStore,
  RoomSize,
} from '../types.js';
import type { RedisArg, RedisClient, Script } from './client.js';

/*
 * Presence keys (after the prefix), each under the hash tag of the one thing it counts, so every
 * script runs in one Redis Cluster slot and is given every key it touches:
 * - a user, `{<app>:<user>}`: `pr:u:` set of the user's open pages; `pr:o:` when their
 *   `user.offline` falls due (no page open, not yet handed out). User online/offline is decided here.
 * - a room, `{<app>:<room>}` (the tag of its history keys): `pr:r:` set of the pages in the room
 *   (occupancy); presence `pr:m:{...}:pages` hash page -> user, `:count` hash user -> pages holding
 *   them, `:order` zset of users by the sequence number they joined at, `:info` hash user -> member
 *   JSON, `:seq` the room's last sequence number. Occupied/vacated and joined/left are decided here.
 * - a node, `{<node>}` (a page's node is its id up to the first '.'): `pr:g:{<node>}:<page>` set of
 *   what one page holds (`u\0<app>\0<user>`, `r\0<app>\0<room>`, `m\0<app>\0<room>\0<user>`; names
 *   hold no control characters); `pr:n:` set of its pages that hold something; `pr:s:` the pages of a
 *   lapse still to sweep, `pr:e:` the last lapse set apart (NodeClaim's `lapse`); `pr:f:` zset of
 *   `<app>\0<user>` by when their offline falls due (a hint: the user's `pr:o:` decides); `pr:l:`
 *   zset (scores 0, byte order) of the `u` and `r` entries its pages hold and `pr:c:` hash of how
 *   many of its pages hold each: the node's part of the listings of an app's users and rooms.
 * - `pr:nodes`: zset of the nodes above by when they last registered (Redis's clock), so the offline
 *   poll and the listings find every node's keys. A node registers at most every 30 s, before it
 *   writes: no key every page or join touches.
 * A step that spans slots is ordered so that a crash in between leaves work that the node's own check
 * (closePages) or the sweep of its lapse finishes: the page's record under its node is written first,
 * then the room or user step, and the record is cleared last (in the script that writes the offline
 * hint). Those steps are each idempotent and answer a departure once, so repeating them is safe.
 */

// ---- A room's slot. KEYS: pages, count, order, info, seq, occupancy (roomKeys).

const ROOM_LUA = `
local PAGES, COUNT, ORDER, INFO, SEQ, OCC = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
-- The next number of the room's sequence: above its last one and above the shard's clock in
-- microseconds, so it still rises after the room emptied and its sequence key expired.
local function seq_next()
  local t = redis.call('time')
  local last = tonumber(redis.call('get', SEQ) or '0')
  local n = string.format('%.0f', math.max(last + 1, tonumber(t[1]) * 1000000 + tonumber(t[2])))
  redis.call('set', SEQ, n, 'PX', 3600000)
  return n
end
-- Answers the member's JSON when it was the user's last page in the room, else false.
local function leave(page, user)
  if redis.call('hget', PAGES, page) ~= user then return false end
  redis.call('hdel', PAGES, page)
  if redis.call('hincrby', COUNT, user, -1) > 0 then return false end
  local member = redis.call('hget', INFO, user)
  redis.call('hdel', COUNT, user)
  redis.call('hdel', INFO, user)
  redis.call('zrem', ORDER, user)
  seq_next()
  return member or cjson.encode({user = user})
end
local function exit_room(page)
  return redis.call('srem', OCC, page) == 1 and redis.call('exists', OCC) == 0
end
`;

// ARGV: page. 1 when the room had no page.
const ENTER_LUA = `${ROOM_LUA}
local first = redis.call('sadd', OCC, ARGV[1]) == 1 and redis.call('scard', OCC) == 1
if first then return 1 end
return 0`;

// ARGV: page. 1 when it was the room's last page.
const EXIT_LUA = `${ROOM_LUA}
if exit_room(ARGV[1]) then return 1 end
return 0`;

// ARGV: page, user, member JSON. A new member goes after the newest.
const JOIN_LUA = `${ROOM_LUA}
local page, user = ARGV[1], ARGV[2]
if redis.call('hsetnx', PAGES, page, user) == 0 then return 0 end
if redis.call('hincrby', COUNT, user, 1) > 1 then return 0 end
redis.call('zadd', ORDER, seq_next(), user)
redis.call('hset', INFO, user, ARGV[3])
return 1`;

// ARGV: page, user.
const LEAVE_LUA = `${ROOM_LUA}
if leave(ARGV[1], ARGV[2]) then return 1 end
return 0`;

// ARGV: page, user ('' when the page is no member), '1' when it has a seat. What a page's close does
// in one room, member first: answers the member JSON when it left ('' else), 1 when the room was vacated.
const CLOSE_ROOM_LUA = `${ROOM_LUA}
local out = {'', 0}
if ARGV[2] ~= '' then out[1] = leave(ARGV[1], ARGV[2]) or '' end
if ARGV[3] == '1' and exit_room(ARGV[1]) then out[2] = 1 end
return out`;

// ARGV: first rank, last rank (-1: the end). Answers member JSONs in join order.
const MEMBERS_LUA = `${ROOM_LUA}
local users = redis.call('zrange', ORDER, ARGV[1], ARGV[2])
if #users == 0 then return {} end
local infos = redis.call('hmget', INFO, unpack(users))
for n, user in ipairs(users) do
  if not infos[n] then infos[n] = cjson.encode({user = user}) end
end
return infos`;

// ARGV: after (a sequence number), limit. Answers count, sequence, 1 when more members follow (else
// 0), then user, sequence number, member JSON per member, in join order.
const PAGE_LUA = `${ROOM_LUA}
local limit = tonumber(ARGV[2])
local out = {redis.call('zcard', ORDER), redis.call('get', SEQ) or '0', 0}
local found = redis.call('zrangebyscore', ORDER, '(' .. ARGV[1], '+inf', 'WITHSCORES', 'LIMIT', 0, limit + 1)
local n = math.min(limit, #found / 2)
if #found / 2 > limit then out[3] = 1 end
if n == 0 then return out end
local users = {}
for i = 1, n do users[i] = found[2 * i - 1] end
local infos = redis.call('hmget', INFO, unpack(users))
for i = 1, n do
  out[#out + 1] = users[i]
  out[#out + 1] = found[2 * i]
  out[#out + 1] = infos[i] or cjson.encode({user = users[i]})
end
return out`;

// Answers the room's member count and sequence.
const COUNT_LUA = `${ROOM_LUA}
return {redis.call('zcard', ORDER), redis.call('get', SEQ) or '0'}`;

// Answers the room's pages and members (a listing).
const ROOM_SIZE_LUA = `${ROOM_LUA}
return {redis.call('scard', OCC), redis.call('zcard', ORDER)}`;

// ---- A user's slot. KEYS: pages, offline due (userKeys).

// ARGV: page. 1 when the user had no page and no offline pending (user.online).
const OPENED_LUA = `
local fresh = redis.call('exists', KEYS[1]) == 0 and redis.call('exists', KEYS[2]) == 0
redis.call('sadd', KEYS[1], ARGV[1])
redis.call('del', KEYS[2])
if fresh then return 1 end
return 0`;

// ARGV: page, now, offline delay. The user's last page sets when their offline falls due; answers
// that time while it is pending and they have no page ('' else), also to a close repeated after a
// crash, so the hint is written whichever close gets through.
const CLOSED_LUA = `
if redis.call('srem', KEYS[1], ARGV[1]) == 1 and redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[2], string.format('%.0f', tonumber(ARGV[2]) + tonumber(ARGV[3])))
end
if redis.call('exists', KEYS[1]) == 1 then return '' end
return redis.call('get', KEYS[2]) or ''`;

// ARGV: now. 1 when the user's offline is due and handed to this caller (once).
const CLAIM_LUA = `
if redis.call('exists', KEYS[1]) == 1 then return 0 end
local at = redis.call('get', KEYS[2])
if not at or tonumber(at) > tonumber(ARGV[1]) then return 0 end
redis.call('del', KEYS[2])
return 1`;

// KEYS: pages, offline due of each user (one slot). ARGV: now. Answers 1 or 0 per user.
const ONLINE_LUA = `
local now, out = tonumber(ARGV[1]), {}
for i = 1, #KEYS, 2 do
  local on = redis.call('exists', KEYS[i]) == 1
  if not on then
    local at = redis.call('get', KEYS[i + 1])
    on = at ~= false and now < tonumber(at)
  end
  out[#out + 1] = on and 1 or 0
end
return out`;

// ---- A node's slot.

// KEYS: pages (n), listing counts (c), listing (l), the page's record (g). ARGV: page, entry.
const HOLD_LUA = `
local kind = string.sub(ARGV[2], 1, 1)
if redis.call('sadd', KEYS[4], ARGV[2]) == 1 and (kind == 'u' or kind == 'r') then
  if redis.call('hincrby', KEYS[2], ARGV[2], 1) == 1 then redis.call('zadd', KEYS[3], 0, ARGV[2]) end
end
redis.call('sadd', KEYS[1], ARGV[1])
return 1`;

// KEYS: pages (n), swept (s), listing counts (c), listing (l), offline hints (f), then each page's
// record (g). ARGV: '1' when the pages were closed by a sweep or closePages, hint count, (due, app\0user) per hint, then per page: page, entry count, its entries.
// Writes the hints, then takes out of each record what its room and user steps ended. Answers how
// many pages are still to sweep.
const FINISH_LUA = `
local N, S, C, L, F = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local closed = ARGV[1] == '1'
local at = 3
for _ = 1, tonumber(ARGV[2]) do
  redis.call('zadd', F, ARGV[at], ARGV[at + 1])
  at = at + 2
end
for k = 6, #KEYS do
  local g, page, count = KEYS[k], ARGV[at], tonumber(ARGV[at + 1])
  at = at + 2
  for _ = 1, count do
    local entry = ARGV[at]
    at = at + 1
    local kind = string.sub(entry, 1, 1)
    if redis.call('srem', g, entry) == 1 and (kind == 'u' or kind == 'r') then
      if redis.call('hincrby', C, entry, -1) <= 0 then
        redis.call('hdel', C, entry)
        redis.call('zrem', L, entry)
      end
    end
  end
  if redis.call('exists', g) == 0 then
    redis.call('srem', N, page)
    redis.call('srem', S, page)
  elseif closed and redis.call('sismember', N, page) == 1 then
    -- What it holds since (a live node after all) is counted in N again; what a failed step left
    -- keeps it in S for the next sweep.
    redis.call('srem', S, page)
  end
end
return redis.call('scard', S)`;

// KEYS: records (g) of pages of one node. Answers the entries of each.
const READ_LUA = `
local out = {}
for i, g in ipairs(KEYS) do out[i] = redis.call('smembers', g) end
return out`;

// KEYS: pages (n), swept (s), lapse (e). ARGV: lapse, pages per chunk. The first chunk of each lapse
// sets the node's pages apart: should the node still be alive (it renews again), what it opens from
// then on is counted apart from what is swept. Answers up to that many pages still to sweep.
const SWEEP_LUA = `
local n, s, e = KEYS[1], KEYS[2], KEYS[3]
if tonumber(redis.call('get', e) or '0') < tonumber(ARGV[1]) then
  if redis.call('exists', n) == 1 then
    if redis.call('exists', s) == 1 then
      redis.call('sunionstore', s, s, n)
      redis.call('del', n)
    else
      redis.call('rename', n, s)
    end
  end
  -- Kept past any sweep of this lapse (a re-claim must not set apart again what the node opened since).
  redis.call('set', e, ARGV[1], 'PX', 604800000)
end
return redis.call('srandmember', s, tonumber(ARGV[2]))`;

// KEYS: offline hints (f). ARGV: now, limit, lease end. Leases up to limit hints that are due (until
// the lease ends nobody else takes them; a caller that dies leaves them to the next), answers them and
// the earliest score left ('' none).
const TAKE_LUA = `
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do redis.call('zadd', KEYS[1], ARGV[3], m) end
local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
return {due, first[2] or ''}`;

// KEYS: offline hints (f). ARGV: lease end, hints... Removes the hints still under that lease (a
// later close of the same user wrote a new one: kept).
const DONE_LUA = `
for i = 2, #ARGV do
  local score = redis.call('zscore', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[1]) then redis.call('zrem', KEYS[1], ARGV[i]) end
end
return 1`;

// KEYS: n, s, f, l. 1 when the node keeps nothing here.
const EMPTY_LUA = `
if redis.call('exists', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) == 0 then return 1 end
return 0`;

// ---- The registry of nodes (one low-rate key). KEYS: registry.

const REDIS_MS = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// ARGV: node.
const REGISTER_LUA = `${REDIS_MS}
redis.call('zadd', KEYS[1], string.format('%.0f', now), ARGV[1])
return 1`;

// Answers Redis's clock (ms), then node, registered at, per node.
const REGISTRY_LUA = `${REDIS_MS}
return {string.format('%.0f', now), redis.call('zrange', KEYS[1], 0, -1, 'WITHSCORES')}`;

// ARGV: node, registered before. Forgets the node unless it registered again since.
const UNREGISTER_LUA = `
local at = redis.call('zscore', KEYS[1], ARGV[1])
if at and tonumber(at) < tonumber(ARGV[2]) then redis.call('zrem', KEYS[1], ARGV[1]) end
return 1`;

/** How often a node registers again, at most (before it writes under its keys). */
const REGISTER_EVERY_MS = 30_000;
/** A node that has not registered for this long and keeps nothing is forgotten. */
const FORGET_AFTER_MS = 10 * 60_000;
/** Stale nodes checked per registry read at most. */
const FORGET_AT_ONCE = 10;
/** How long a taker holds offline hints it took before another may take them (it died). */
const TAKE_LEASE_MS = 30_000;
/** Members per SSCAN step of a node's pages. */
const SCAN_COUNT = 500;
/** Entries of the in-process caches (nodes registered, nodes read) before they start over. */
const CACHE_BOUND = 10_000;

export interface RedisPresenceOptions {
  /** How long a user stays online after their last page closed. */
  offlineDelayMs?: number;
}

const strings = (reply: unknown): string[] => (Array.isArray(reply) ? reply.map((item) => String(item ?? '')) : []);

function toMember(json: string): Member {
  try {
    const parsed = JSON.parse(json) as unknown;
    if (parsed !== null && typeof parsed === 'object' && typeof (parsed as Member).user === 'string') {
      return parsed as Member;
    }
  } catch {
    // Written from JSON.stringify by joinRoom: unreadable only if something else wrote it.
  }
  return { user: '' };
}

const SEP = '\u0000';

/** What a page holds, as recorded under its node. */
type Held =
  | { kind: 'u'; app: string; user: string }
  | { kind: 'r'; app: string; room: string }
  | { kind: 'm'; app: string; room: string; user: string };

function entryOf(held: Held): string {
  if (held.kind === 'u') return ['u', held.app, held.user].join(SEP);
  if (held.kind === 'r') return ['r', held.app, held.room].join(SEP);
  return ['m', held.app, held.room, held.user].join(SEP);
}

function heldOf(entry: string): Held | undefined {
  const [kind, app = '', a = '', b = ''] = entry.split(SEP);
  if (kind === 'u') return { kind, app, user: a };
  if (kind === 'r') return { kind, app, room: a };
  if (kind === 'm') return { kind, app, room: a, user: b };
  return undefined;
}

interface NodeKeys {
  n: string;
  s: string;
  e: string;
  f: string;
  l: string;
  c: string;
}

/** One page to take out of what it holds: the entries of its record that were read. */
interface Closing {
  page: string;
  entries: string[];
}

/**
 * Who is where, over every node sharing Redis (one, or a Redis Cluster). Each decision that starts a
 * webhook event is one script in the slot of what it is about (a user's first or last page: the
 * user's; occupied, vacated, joined, left: the room's), so it reaches one caller. What a page holds is
 * recorded under its node before, and cleared after, so a page whose close did not finish is closed
 * by the node's own check (closePages) or by the sweep of the node's lapse (sweepNode), each step
 * again, and no departure is answered twice.
 */
export class RedisPresenceStore implements PresenceStore {
  readonly #client: RedisClient;
  readonly #delay: number;
  readonly #registry: string;
  readonly #scripts: Record<
    | 'enter'
    | 'exit'
    | 'join'
    | 'leave'
    | 'closeRoom'
    | 'members'
    | 'page'
    | 'count'
    | 'roomSize'
    | 'opened'
    | 'closed'
    | 'claim'
    | 'online'
    | 'hold'
    | 'finish'
    | 'read'
    | 'sweep'
    | 'take'
    | 'done'
    | 'empty'
    | 'register'
    | 'registry'
    | 'unregister',
    Script
  >;
  /** Nodes this store registered, by when (performance.now()). */
  readonly #registered = new Map<string, number>();
  /** The registry as last read by the offline poll, at which time (the caller's). */
  #known: { at: number; nodes: Set<string> } | undefined;
  /**
   * Per node, when the poll read its offline hints (the caller's time) and when it must read them
   * again: at their earliest due, or a delay after the read, since a hint written after the read falls
   * due a whole delay after its close.
   */
  readonly #polled = new Map<string, { at: number; next: number }>();

  constructor(client: RedisClient, options: RedisPresenceOptions = {}) {
    this.#client = client;
    this.#delay = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
    this.#registry = client.key('pr:nodes');
    const s = (name: string, lua: string) => client.script(`rtPresence${name}`, lua);
    this.#scripts = {
      enter: s('Enter', ENTER_LUA),
      exit: s('Exit', EXIT_LUA),
      join: s('Join', JOIN_LUA),
      leave: s('Leave', LEAVE_LUA),
      closeRoom: s('CloseRoom', CLOSE_ROOM_LUA),
      members: s('Members', MEMBERS_LUA),
      page: s('Page', PAGE_LUA),
      count: s('Count', COUNT_LUA),
      roomSize: s('RoomSize', ROOM_SIZE_LUA),
      opened: s('Opened', OPENED_LUA),
      closed: s('Closed', CLOSED_LUA),
      claim: s('Claim', CLAIM_LUA),
      online: s('Online', ONLINE_LUA),
      hold: s('Hold', HOLD_LUA),
      finish: s('Finish', FINISH_LUA),
      read: s('Read', READ_LUA),
      sweep: s('Sweep', SWEEP_LUA),
      take: s('Take', TAKE_LUA),
      done: s('Done', DONE_LUA),
      empty: s('Empty', EMPTY_LUA),
      register: s('Register', REGISTER_LUA),
      registry: s('Registry', REGISTRY_LUA),
      unregister: s('Unregister', UNREGISTER_LUA),
    };
  }

  #roomKeys(app: string, room: string): string[] {
    const tag = `{${app}:${room}}`;
    const m = this.#client.key(`pr:m:${tag}:`);
    return [`${m}pages`, `${m}count`, `${m}order`, `${m}info`, `${m}seq`, this.#client.key(`pr:r:${tag}`)];
  }

  #userKeys(app: string, user: string): string[] {
    const tag = `{${app}:${user}}`;
    return [this.#client.key(`pr:u:${tag}`), this.#client.key(`pr:o:${tag}`)];
  }

  #nodeKeys(node: string): NodeKeys {
    const key = (part: string) => this.#client.key(`pr:${part}:{${node}}`);
    return { n: key('n'), s: key('s'), e: key('e'), f: key('f'), l: key('l'), c: key('c') };
  }

  #record(node: string, page: string): string {
    return this.#client.key(`pr:g:{${node}}:${page}`);
  }

  /** Registers the node before anything is written under its keys (at most every REGISTER_EVERY_MS). */
  async #register(node: string): Promise<void> {
    const at = this.#registered.get(node);
    const now = performance.now();
    if (at !== undefined && now - at < REGISTER_EVERY_MS) return;
    await this.#scripts.register([this.#registry], [node]);
    if (this.#registered.size >= CACHE_BOUND) this.#registered.clear();
    this.#registered.set(node, now);
    this.#known?.nodes.add(node);
  }

  /** Step one of what a page takes: its record under its node. */
  async #hold(page: string, held: Held): Promise<void> {
    const node = nodeOfPage(page);
    await this.#register(node);
    const keys = this.#nodeKeys(node);
    await this.#scripts.hold([keys.n, keys.c, keys.l, this.#record(node, page)], [page, entryOf(held)]);
  }

  /**
   * Clears one entry of a page's record once its room step was written. A failure here must not lose
   * the room step's answer (asked again, it would answer nothing): the entry stays, and the page's
   * later close or the node's check (closePages, once the page is gone) clears it, ending nothing.
   */
  async #release(page: string, held: Held): Promise<void> {
    try {
      await this.#finish(nodeOfPage(page), [{ page, entries: [entryOf(held)] }], [], false);
    } catch {
      // Left for the node's check, as above.
    }
  }

  /**
   * The last step of closing pages of one node: writes the offline hints, then takes out of the
   * records what was closed. Answers how many pages of the node are still to sweep.
   */
  async #finish(
    node: string,
    closing: readonly Closing[],
    hints: readonly [string, string][],
    closed: boolean,
  ): Promise<number> {
    if (hints.length > 0) await this.#register(node);
    const keys = this.#nodeKeys(node);
    const args: RedisArg[] = [closed ? '1' : '0', hints.length];
    for (const [due, user] of hints) args.push(due, user);
    for (const { page, entries } of closing) args.push(page, entries.length, ...entries);
    const records = closing.map(({ page }) => this.#record(node, page));
    return Number(await this.#scripts.finish([keys.n, keys.s, keys.c, keys.l, keys.f, ...records], args));
  }

  async pageOpened(app: string, user: string, page: string, _nowMs?: number): Promise<boolean> {
    await this.#hold(page, { kind: 'u', app, user });
    return (await this.#scripts.opened(this.#userKeys(app, user), [page])) === 1;
  }

  async pageClosed(app: string, user: string, page: string, nowMs: number): Promise<void> {
    const due = String(await this.#scripts.closed(this.#userKeys(app, user), [page, nowMs, this.#delay]));
    const hints: [string, string][] = due === '' ? [] : [[due, `${app}${SEP}${user}`]];
    const entries = [entryOf({ kind: 'u', app, user })];
    await this.#finish(nodeOfPage(page), [{ page, entries }], hints, false);
  }

  async takeOffline(nowMs: number, limit: number): Promise<GoneUser[]> {
    if (limit <= 0) return [];
    const gone: GoneUser[] = [];
    let failure: unknown;
    for (const node of await this.#pollNodes(nowMs)) {
      const polled = this.#polled.get(node);
      if (polled && nowMs >= polled.at && nowMs < polled.next) continue;
      try {
        const more = await this.#takeFrom(node, nowMs, limit, gone);
        if (!more) continue;
      } catch (error) {
        failure ??= error;
        continue;
      }
      break;
    }
    // What was handed out is this caller's to report, even when another node's hints failed.
    if (gone.length === 0 && failure !== undefined) throw failure;
    return gone;
  }

  /**
   * Takes the due offline hints of one node until `gone` holds `limit` users; answers true when it
   * stopped at the limit (more may be due).
   */
  async #takeFrom(node: string, nowMs: number, limit: number, gone: GoneUser[]): Promise<boolean> {
    const { f } = this.#nodeKeys(node);
    for (let round = 0; round < 1000; round++) {
      const want = limit - gone.length;
      if (want <= 0) return true;
      const lease = nowMs + TAKE_LEASE_MS;
      const reply = (await this.#scripts.take([f], [nowMs, want, lease])) as [unknown, unknown];
      const taken = strings(reply[0]);
      const first = String(reply[1] ?? '');
      const claims = await Promise.allSettled(
        taken.map((hint) => {
          const [app = '', user = ''] = hint.split(SEP);
          return this.#scripts.claim(this.#userKeys(app, user), [nowMs]);
        }),
      );
      const settled: string[] = [];
      for (const [i, claim] of claims.entries()) {
        if (claim.status === 'rejected') continue;
        const hint = taken[i] ?? '';
        settled.push(hint);
        const [app = '', user = ''] = hint.split(SEP);
        if (claim.value === 1) gone.push({ app, user });
      }
      // A hint whose claim failed stays leased: the next taker after the lease tries it again.
      if (settled.length > 0) await this.#scripts.done([f], [lease, ...settled]);
      const failed = claims.find((claim) => claim.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      if (taken.length < want) {
        if (this.#polled.size >= CACHE_BOUND) this.#polled.clear();
        const next = first === '' ? Number.POSITIVE_INFINITY : Number(first);
        this.#polled.set(node, { at: nowMs, next: Math.min(next, nowMs + this.#delay) });
        return false;
      }
    }
    return true;
  }

  /**
   * The nodes whose hints the poll reads: the registry, read again a delay after the last read (a
   * node registered since has no hint due before then), with those this store registered meanwhile.
   * Forgets nodes that registered long ago and keep nothing.
   */
  async #pollNodes(nowMs: number): Promise<Set<string>> {
    const known = this.#known;
    if (known && nowMs >= known.at && nowMs < known.at + this.#delay) return known.nodes;
    const { redisNow, nodes } = await this.#readRegistry();
    this.#known = { at: nowMs, nodes: new Set(nodes.keys()) };
    const stale = [...nodes].filter(([, at]) => at < redisNow - FORGET_AFTER_MS).slice(0, FORGET_AT_ONCE);
    for (const [node] of stale) {
      try {
        const keys = this.#nodeKeys(node);
        if ((await this.#scripts.empty([keys.n, keys.s, keys.f, keys.l], [])) !== 1) continue;
        await this.#scripts.unregister([this.#registry], [node, redisNow - FORGET_AFTER_MS]);
      } catch {
        // Tried again at a later read: forgetting a node is housekeeping.
      }
    }
    return this.#known.nodes;
  }

  async #readRegistry(): Promise<{ redisNow: number; nodes: Map<string, number> }> {
    const reply = (await this.#scripts.registry([this.#registry], [])) as [unknown, unknown];
    const list = strings(reply[1]);
    const nodes = new Map<string, number>();
    for (let i = 0; i + 1 < list.length; i += 2) nodes.set(list[i] ?? '', Number(list[i + 1]));
    return { redisNow: Number(reply[0]), nodes };
  }

  async online(app: string, users: readonly string[], nowMs: number): Promise<boolean[]> {
    if (users.length === 0) return [];
    // One script per slot: users in one slot are answered together.
    const bySlot = new Map<number, number[]>();
    for (const [i, user] of users.entries()) {
      const slot = calculateSlot(`{${app}:${user}}`);
      const list = bySlot.get(slot);
      if (list) list.push(i);
      else bySlot.set(slot, [i]);
    }
    const answer = users.map(() => false);
    await Promise.all(
      [...bySlot.values()].map(async (indexes) => {
        const keys = indexes.flatMap((i) => this.#userKeys(app, users[i] ?? ''));
        const reply = await this.#scripts.online(keys, [nowMs]);
        if (!Array.isArray(reply)) return;
        for (const [n, i] of indexes.entries()) answer[i] = reply[n] === 1;
      }),
    );
    return answer;
  }

  async userPages(app: string, user: string): Promise<number> {
    const [pages = ''] = this.#userKeys(app, user);
    return Number(await this.#client.call((redis) => redis.scard(pages)));
  }

  async enterRoom(app: string, room: string, page: string): Promise<boolean> {
    await this.#hold(page, { kind: 'r', app, room });
    return (await this.#scripts.enter(this.#roomKeys(app, room), [page])) === 1;
  }

  async exitRoom(app: string, room: string, page: string): Promise<boolean> {
    const last = (await this.#scripts.exit(this.#roomKeys(app, room), [page])) === 1;
    await this.#release(page, { kind: 'r', app, room });
    return last;
  }

  async joinRoom(app: string, room: string, member: Member, page: string): Promise<boolean> {
    await this.#hold(page, { kind: 'm', app, room, user: member.user });
    const args = [page, member.user, JSON.stringify(member)];
    return (await this.#scripts.join(this.#roomKeys(app, room), args)) === 1;
  }

  async leaveRoom(app: string, room: string, user: string, page: string): Promise<boolean> {
    const left = (await this.#scripts.leave(this.#roomKeys(app, room), [page, user])) === 1;
    await this.#release(page, { kind: 'm', app, room, user });
    return left;
  }

  async members(app: string, room: string): Promise<Member[]> {
    return strings(await this.#scripts.members(this.#roomKeys(app, room), [0, -1])).map(toMember);
  }

  async memberPage(app: string, room: string, page: { after?: string; limit: number }): Promise<MemberPage> {
    // Cursors are sequence numbers this store gave; anything else starts from the first member.
    const after = page.after !== undefined && /^\d{1,16}$/.test(page.after) ? page.after : '0';
    const limit = Math.max(1, Math.floor(page.limit));
    const reply = strings(await this.#scripts.page(this.#roomKeys(app, room), [after, limit]));
    const answer: MemberPage = { count: Number(reply[0] ?? 0), seq: Number(reply[1] ?? 0), members: [] };
    let last: string | undefined;
    for (let i = 3; i + 2 < reply.length; i += 3) {
      last = reply[i + 1];
      answer.members.push(toMember(reply[i + 2] ?? ''));
    }
    if (reply[2] === '1' && last !== undefined) answer.cursor = last;
    return answer;
  }

  async memberCount(app: string, room: string): Promise<MemberCount> {
    const reply = strings(await this.#scripts.count(this.#roomKeys(app, room), []));
    return { count: Number(reply[0] ?? 0), seq: Number(reply[1] ?? 0) };
  }

  async onlineUsers(app: string, range: NameRange): Promise<{ users: OnlineUser[]; more: boolean }> {
    const { more, names } = await this.#listing(app, 'u', range, async (user) => {
      const [pages = ''] = this.#userKeys(app, user);
      return [Number(await this.#client.call((redis) => redis.scard(pages)))];
    });
    return { users: names.map(([user, pages = 0]) => ({ user, pages })), more };
  }

  async occupiedRooms(app: string, range: NameRange): Promise<{ rooms: OccupiedRoom[]; more: boolean }> {
    const { more, names } = await this.#listing(app, 'r', range, async (room) =>
      strings(await this.#scripts.roomSize(this.#roomKeys(app, room), [])).map(Number),
    );
    return { rooms: names.map(([room, pages = 0, members = 0]) => ({ room, pages, members })), more };
  }

  async roomSize(app: string, room: string): Promise<RoomSize> {
    const [pages = 0, members = 0] = strings(await this.#scripts.roomSize(this.#roomKeys(app, room), [])).map(Number);
    return { pages, members };
  }

  /**
   * An app's users or rooms in byte order, merged from every node's listing (a name a node lists is
   * held by one of its pages, or was until a close that is not finished): each checked in its own slot
   * (`count`, whose first number is its pages: 0 leaves it out).
   */
  async #listing(
    app: string,
    kind: 'u' | 'r',
    range: NameRange,
    count: (name: string) => Promise<number[]>,
  ): Promise<{ more: boolean; names: [string, ...number[]][] }> {
    const limit = Math.max(1, Math.floor(range.limit));
    const start = range.prefix ?? '';
    const head = `${kind}${SEP}${app}${SEP}`;
    // The later of "after `after`" and "from the prefix on" (compared here: Lua compares by locale).
    let min = `[${head}${start}`;
    if (range.after !== undefined && compareNames(range.after, start) >= 0) min = `(${head}${range.after}`;
    // No UTF-8 text holds byte 255: every name that starts with the prefix sorts before it.
    const max = Buffer.concat([Buffer.from(`(${head}${start}`), Buffer.from([0xff])]);
    const { nodes } = await this.#readRegistry();
    const listings = [...nodes.keys()].map((node) => this.#nodeKeys(node).l);
    const found: [string, ...number[]][] = [];
    for (let round = 0; round < 1000 && found.length <= limit; round++) {
      const want = limit + 1 - found.length;
      const lists = await Promise.all(
        listings.map((key) => this.#client.call((redis) => redis.zrangebylex(key, min, max, 'LIMIT', 0, want))),
      );
      // Past the lowest last name of a full list, that node may hold names not read yet.
      let cutoff: string | undefined;
      for (const list of lists) {
        const last = list.length === want ? list.at(-1)?.slice(head.length) : undefined;
        if (last !== undefined && (cutoff === undefined || compareNames(last, cutoff) < 0)) cutoff = last;
      }
      const names = [...new Set(lists.flat().map((entry) => entry.slice(head.length)))]
        .filter((name) => cutoff === undefined || compareNames(name, cutoff) <= 0)
        .sort(compareNames);
      const counts = await Promise.all(names.map(count));
      for (const [i, name] of names.entries()) {
        const numbers = counts[i] ?? [];
        if ((numbers[0] ?? 0) > 0) found.push([name, ...numbers]);
        if (found.length > limit) break;
      }
      if (cutoff === undefined) break;
      min = `(${head}${cutoff}`;
    }
    return { more: found.length > limit, names: found.slice(0, limit) };
  }

  async sweepNode(claim: NodeClaim, nowMs: number, limit: number): Promise<{ departures: Departure[]; done: boolean }> {
    const count = Math.max(1, Math.floor(limit));
    const keys = this.#nodeKeys(claim.node);
    const pages = strings(await this.#scripts.sweep([keys.n, keys.s, keys.e], [claim.lapse, count]));
    if (pages.length === 0) return { departures: [], done: true };
    const { departures, left } = await this.#closeHeld(claim.node, pages, nowMs);
    return { departures, done: left === 0 };
  }

  /** SSCAN in bounded steps: a node's set can be large, and one SMEMBERS would hold Redis for all of it. */
  async nodePages(node: string): Promise<string[]> {
    const { n } = this.#nodeKeys(node);
    // SSCAN may give a member twice (the set grew meanwhile): a Set keeps each once.
    const pages = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await this.#client.call((redis) => redis.sscan(n, cursor, 'COUNT', SCAN_COUNT));
      cursor = next;
      for (const page of batch) pages.add(page);
    } while (cursor !== '0');
    return [...pages];
  }

  async closePages(pages: readonly string[], nowMs: number): Promise<Departure[]> {
    const byNode = new Map<string, string[]>();
    for (const page of new Set(pages)) {
      const node = nodeOfPage(page);
      const list = byNode.get(node);
      if (list) list.push(page);
      else byNode.set(node, [page]);
    }
    const closed = await Promise.allSettled([...byNode].map(([node, list]) => this.#closeHeld(node, list, nowMs)));
    const departures = closed.flatMap((c) => (c.status === 'fulfilled' ? c.value.departures : []));
    // What was decided is the caller's to report; pages of a node that failed stay in its records,
    // for the node's check to close again.
    const failed = closed.find((c) => c.status === 'rejected');
    if (failed && departures.length === 0) throw failed.reason;
    return inOrder(departures);
  }

  /**
   * Closes what pages of one node still hold, as their closes would (per page: presence rooms and
   * rooms, then the user), each in its own slot, then clears from their records what was closed;
   * answers the departures (members left before rooms were vacated) and how many pages of the node
   * are still to sweep (-1: not known). A step that fails leaves its entry in the record for the next
   * close or sweep; what the other steps decided is answered all the same (asked again they would
   * answer nothing), and a failure is thrown only when nothing was closed.
   */
  async #closeHeld(
    node: string,
    pages: readonly string[],
    nowMs: number,
  ): Promise<{ departures: Departure[]; left: number }> {
    const read = await this.#scripts.read(
      pages.map((page) => this.#record(node, page)),
      [],
    );
    const hints: [string, string][] = [];
    const departures: Departure[] = [];
    let failure: unknown;
    let progress = false;
    const closing = await Promise.all(
      pages.map(async (page, i): Promise<Closing> => {
        const rooms = new Map<string, { app: string; room: string; user: string; entries: string[] }>();
        const users: { app: string; user: string; entry: string }[] = [];
        for (const entry of strings(Array.isArray(read) ? read[i] : [])) {
          const held = heldOf(entry);
          if (!held) continue;
          if (held.kind === 'u') {
            users.push({ ...held, entry });
            continue;
          }
          const key = `${held.app}${SEP}${held.room}`;
          const room = rooms.get(key) ?? { app: held.app, room: held.room, user: '', entries: [] };
          if (held.kind === 'm') room.user = held.user;
          room.entries.push(entry);
          rooms.set(key, room);
        }
        const closed: string[] = [];
        const ended = await Promise.allSettled(
          [...rooms.values()].map(async ({ app, room, user, entries }) => {
            const seat = entries.some((entry) => entry.startsWith(`r${SEP}`)) ? '1' : '0';
            const reply = strings(await this.#scripts.closeRoom(this.#roomKeys(app, room), [page, user, seat]));
            closed.push(...entries);
            if (reply[0]) departures.push({ type: 'member.left', app, room, member: toMember(reply[0]) });
            if (reply[1] === '1') departures.push({ type: 'room.vacated', app, room });
          }),
        );
        for (const result of ended) if (result.status === 'rejected') failure ??= result.reason;
        for (const { app, user, entry } of users) {
          try {
            const due = String(await this.#scripts.closed(this.#userKeys(app, user), [page, nowMs, this.#delay]));
            if (due !== '') hints.push([due, `${app}${SEP}${user}`]);
            closed.push(entry);
          } catch (error) {
            failure ??= error;
          }
        }
        if (closed.length > 0) progress = true;
        return { page, entries: closed };
      }),
    );
    if (failure !== undefined && !progress) throw failure;
    let left = -1;
    try {
      left = await this.#finish(node, closing, hints, true);
    } catch (error) {
      // The records stay, for the next close or sweep to clear (ending nothing again).
      if (departures.length === 0) throw error;
    }
    return { departures: inOrder(departures), left: failure === undefined ? left : -1 };
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}

/** Members left before rooms were vacated, as closes report them. */
function inOrder(departures: readonly Departure[]): Departure[] {
  return [
    ...departures.filter((d) => d.type === 'member.left'),
    ...departures.filter((d) => d.type === 'room.vacated'),
  ];
}
