import { LIMITS, type Member } from '@realtime/protocol';
import { compareNames } from '../name-order.js';
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
} from '../types.js';
import type { RedisClient, Script } from './client.js';

/**
 * Lua shared by the presence scripts. ARGV[1] is always the key prefix: every presence key is named
 * here and nowhere else, since the sweep names keys from what it finds. Like the webhook queue,
 * presence lives on one Redis; hash tags still keep each user's, room's and node's keys together.
 *
 * Keys (after the prefix):
 * - `pr:u:{<app>:<user>}` set of the user's open pages;
 * - `pr:off` zset of `<app>:<user>` by when their `user.offline` falls due (no page open);
 * - `pr:r:{<app>:<room>}` set of the pages in the room (occupancy);
 * - a presence room: `pr:m:{<app>:<room>}:order` zset of user ids by the presence sequence number
 *   they joined at (a page of members after a cursor is one ZRANGEBYSCORE), `:info` hash user ->
 *   member JSON, `:count` hash user -> pages holding them, `:pages` hash page -> user;
 * - `pr:au:{<app>}` zset (all scores 0, so in byte order) of the app's users with a page open, and
 *   `pr:ar:{<app>}` of its rooms with a page in them: kept in the same scripts that open and close
 *   pages and seat them, so listing an app's users or rooms reads one key and never scans;
 * - `pr:mseq` the presence sequence: INCR at every member change of any room (MemberCount);
 * - `pr:n:{<node>}` set of the node's pages that hold something; `pr:g:{<node>}:<page>` set of what
 *   one page holds: `u\0<app>\0<user>`, `r\0<app>\0<room>`, `m\0<app>\0<room>\0<user>` (names
 *   hold no control characters);
 * - `pr:s:{<node>}` the pages of a dead node still to sweep, set apart from `pr:n:{<node>}` by the
 *   first sweep of each lapse; `pr:e:{<node>}` the last lapse set apart (NodeClaim's `lapse`), so
 *   each lapse does it once (the node leases and their claims are NodeStore's).
 * A page's node is its id up to the first '.' (`<node>.<n>`; an id without one is its own node).
 */
const PRESENCE_LUA = `
local P = ARGV[1]
local SEP = string.char(0)
local OFF, MSEQ = P .. 'pr:off', P .. 'pr:mseq'
local function ukey(app, user) return P .. 'pr:u:{' .. app .. ':' .. user .. '}' end
local function rkey(app, room) return P .. 'pr:r:{' .. app .. ':' .. room .. '}' end
local function aukey(app) return P .. 'pr:au:{' .. app .. '}' end
local function arkey(app) return P .. 'pr:ar:{' .. app .. '}' end
local function mkey(app, room, part) return P .. 'pr:m:{' .. app .. ':' .. room .. '}:' .. part end
local function nkey(node) return P .. 'pr:n:{' .. node .. '}' end
local function skey(node) return P .. 'pr:s:{' .. node .. '}' end
local function ekey(node) return P .. 'pr:e:{' .. node .. '}' end
local function gkey(node, page) return P .. 'pr:g:{' .. node .. '}:' .. page end
local function node_of(page)
  local dot = string.find(page, '.', 1, true)
  if dot then return string.sub(page, 1, dot - 1) end
  return page
end

-- Records what a page holds under its node, so a sweep finds it.
local function hold(page, entry)
  local node = node_of(page)
  redis.call('sadd', gkey(node, page), entry)
  redis.call('sadd', nkey(node), page)
end

local function release(page, entry)
  local node = node_of(page)
  local g = gkey(node, page)
  redis.call('srem', g, entry)
  if redis.call('exists', g) == 0 then redis.call('srem', nkey(node), page) end
end

-- The closes, shared by the calls and the sweep: each acts only if the page was still there.
local function close_page(app, user, page, now, delay)
  local k = ukey(app, user)
  if redis.call('srem', k, page) == 1 and redis.call('exists', k) == 0 then
    redis.call('zadd', OFF, now + delay, app .. ':' .. user)
    redis.call('zrem', aukey(app), user)
  end
end

local function exit_room(app, room, page)
  local k = rkey(app, room)
  if redis.call('srem', k, page) == 1 and redis.call('exists', k) == 0 then
    redis.call('zrem', arkey(app), room)
    return true
  end
  return false
end

-- Answers the member's JSON when it was the user's last page there, else false.
local function leave_room(app, room, user, page)
  local pages = mkey(app, room, 'pages')
  if redis.call('hget', pages, page) ~= user then return false end
  redis.call('hdel', pages, page)
  local count = mkey(app, room, 'count')
  if redis.call('hincrby', count, user, -1) > 0 then return false end
  local info = mkey(app, room, 'info')
  local member = redis.call('hget', info, user)
  redis.call('hdel', count, user)
  redis.call('hdel', info, user)
  redis.call('zrem', mkey(app, room, 'order'), user)
  redis.call('incr', MSEQ)
  return member or cjson.encode({user = user})
end

local function split(text)
  local parts, from = {}, 1
  while true do
    local at = string.find(text, SEP, from, true)
    if not at then parts[#parts + 1] = string.sub(text, from); return parts end
    parts[#parts + 1] = string.sub(text, from, at - 1)
    from = at + 1
  end
end

-- Closes what one page still holds as its close would (presence rooms, rooms, then the user), adding
-- kind, app, room, member JSON per departure to out ('l' member left, 'v' room vacated).
local function close_held(node, page, now, delay, out)
  local g = gkey(node, page)
  local held = {u = {}, r = {}, m = {}}
  for _, entry in ipairs(redis.call('smembers', g)) do
    local parts = split(entry)
    local list = held[parts[1]]
    if list then list[#list + 1] = parts end
  end
  redis.call('del', g)
  for _, e in ipairs(held.m) do
    local member = leave_room(e[2], e[3], e[4], page)
    if member then
      out[#out + 1] = 'l'; out[#out + 1] = e[2]; out[#out + 1] = e[3]; out[#out + 1] = member
    end
  end
  for _, e in ipairs(held.r) do
    if exit_room(e[2], e[3], page) then
      out[#out + 1] = 'v'; out[#out + 1] = e[2]; out[#out + 1] = e[3]; out[#out + 1] = ''
    end
  end
  for _, e in ipairs(held.u) do close_page(e[2], e[3], page, now, delay) end
end
`;

// ARGV: prefix, app, user, page. 1 when the user had no page and no offline pending.
const OPENED_LUA = `${PRESENCE_LUA}
local app, user, page = ARGV[2], ARGV[3], ARGV[4]
local k = ukey(app, user)
local fresh = redis.call('exists', k) == 0 and not redis.call('zscore', OFF, app .. ':' .. user)
redis.call('sadd', k, page)
redis.call('zadd', aukey(app), 0, user)
redis.call('zrem', OFF, app .. ':' .. user)
hold(page, 'u' .. SEP .. app .. SEP .. user)
if fresh then return 1 end
return 0`;

// ARGV: prefix, app, user, page, now, offline delay.
const CLOSED_LUA = `${PRESENCE_LUA}
local app, user, page = ARGV[2], ARGV[3], ARGV[4]
close_page(app, user, page, tonumber(ARGV[5]), tonumber(ARGV[6]))
release(page, 'u' .. SEP .. app .. SEP .. user)
return 1`;

// ARGV: prefix, now, limit. Answers app, user, app, user, ...
const TAKE_LUA = `${PRESENCE_LUA}
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
while #out < 2 * limit do
  local due = redis.call('zrangebyscore', OFF, '-inf', now, 'LIMIT', 0, limit - #out / 2)
  if #due == 0 then break end
  for _, m in ipairs(due) do
    redis.call('zrem', OFF, m)
    local colon = string.find(m, ':', 1, true)
    local app, user = string.sub(m, 1, colon - 1), string.sub(m, colon + 1)
    -- A page that opened since cancelled the offline (pageOpened takes it out too).
    if redis.call('exists', ukey(app, user)) == 0 then
      out[#out + 1] = app
      out[#out + 1] = user
    end
  end
end
return out`;

// ARGV: prefix, app, now, users... Answers 1 or 0 per user.
const ONLINE_LUA = `${PRESENCE_LUA}
local app, now = ARGV[2], tonumber(ARGV[3])
local out = {}
for n = 4, #ARGV do
  local user = ARGV[n]
  local on = redis.call('exists', ukey(app, user)) == 1
  if not on then
    local at = redis.call('zscore', OFF, app .. ':' .. user)
    on = at ~= false and now < tonumber(at)
  end
  out[#out + 1] = on and 1 or 0
end
return out`;

// ARGV: prefix, app, user. How many pages the user has open.
const USER_PAGES_LUA = `${PRESENCE_LUA}
return redis.call('scard', ukey(ARGV[2], ARGV[3]))`;

// ARGV: prefix, app, room, page.
const ENTER_LUA = `${PRESENCE_LUA}
local app, room, page = ARGV[2], ARGV[3], ARGV[4]
local k = rkey(app, room)
local first = redis.call('sadd', k, page) == 1 and redis.call('scard', k) == 1
redis.call('zadd', arkey(app), 0, room)
hold(page, 'r' .. SEP .. app .. SEP .. room)
if first then return 1 end
return 0`;

// ARGV: prefix, app, room, page.
const EXIT_LUA = `${PRESENCE_LUA}
local app, room, page = ARGV[2], ARGV[3], ARGV[4]
local last = exit_room(app, room, page)
release(page, 'r' .. SEP .. app .. SEP .. room)
if last then return 1 end
return 0`;

// ARGV: prefix, app, room, user, page, member JSON. A new member goes after the newest.
const JOIN_LUA = `${PRESENCE_LUA}
local app, room, user, page = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('hsetnx', mkey(app, room, 'pages'), page, user) == 0 then return 0 end
hold(page, 'm' .. SEP .. app .. SEP .. room .. SEP .. user)
if redis.call('hincrby', mkey(app, room, 'count'), user, 1) > 1 then return 0 end
redis.call('zadd', mkey(app, room, 'order'), redis.call('incr', MSEQ), user)
redis.call('hset', mkey(app, room, 'info'), user, ARGV[6])
return 1`;

// ARGV: prefix, app, room, user, page.
const LEAVE_LUA = `${PRESENCE_LUA}
local app, room, user, page = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local member = leave_room(app, room, user, page)
release(page, 'm' .. SEP .. app .. SEP .. room .. SEP .. user)
if member then return 1 end
return 0`;

// ARGV: prefix, app, room, first rank, last rank (-1: the end). Answers member JSONs in join order.
const MEMBERS_LUA = `${PRESENCE_LUA}
local app, room = ARGV[2], ARGV[3]
local users = redis.call('zrange', mkey(app, room, 'order'), ARGV[4], ARGV[5])
if #users == 0 then return {} end
local infos = redis.call('hmget', mkey(app, room, 'info'), unpack(users))
for n, user in ipairs(users) do
  if not infos[n] then infos[n] = cjson.encode({user = user}) end
end
return infos`;

// ARGV: prefix, app, room, after (a sequence number), limit. Answers count, presence sequence, 1 when
// more members follow (else 0), then user, sequence number, member JSON per member, in join order.
const PAGE_LUA = `${PRESENCE_LUA}
local app, room, limit = ARGV[2], ARGV[3], tonumber(ARGV[5])
local order = mkey(app, room, 'order')
local out = {redis.call('zcard', order), tonumber(redis.call('get', MSEQ) or '0'), 0}
local found = redis.call('zrangebyscore', order, '(' .. ARGV[4], '+inf', 'WITHSCORES', 'LIMIT', 0, limit + 1)
local n = math.min(limit, #found / 2)
if #found / 2 > limit then out[3] = 1 end
if n == 0 then return out end
local users = {}
for i = 1, n do users[i] = found[2 * i - 1] end
local infos = redis.call('hmget', mkey(app, room, 'info'), unpack(users))
for i = 1, n do
  out[#out + 1] = users[i]
  out[#out + 1] = found[2 * i]
  out[#out + 1] = infos[i] or cjson.encode({user = users[i]})
end
return out`;

// ARGV: prefix, app, room. Answers the room's count and the presence sequence.
const COUNT_LUA = `${PRESENCE_LUA}
return {redis.call('zcard', mkey(ARGV[2], ARGV[3], 'order')), tonumber(redis.call('get', MSEQ) or '0')}`;

// ARGV: prefix, app, 'u' (users) or 'r' (rooms), limit, the ZRANGEBYLEX min, name prefix ('' any).
// Answers 1 when more follow (else 0), then per name in byte order: the name,
// its pages, and for rooms its presence members.
const LIST_LUA = `${PRESENCE_LUA}
local app, users, limit, min, start = ARGV[2], ARGV[3] == 'u', tonumber(ARGV[4]), ARGV[5], ARGV[6]
local index = users and aukey(app) or arkey(app)
local max = '+'
-- No UTF-8 text holds byte 255: every name that starts with the prefix sorts before this.
if start ~= '' then max = '(' .. start .. string.char(255) end
local out = {0}
local offset, found = 0, 0
while found <= limit do
  local names = redis.call('zrangebylex', index, min, max, 'LIMIT', offset, limit + 1 - found)
  if #names == 0 then break end
  for _, name in ipairs(names) do
    local pages = redis.call('scard', users and ukey(app, name) or rkey(app, name))
    if pages == 0 then
      -- Left behind by a node that ran an older script (an upgrade): dropped as it is found.
      redis.call('zrem', index, name)
    else
      found = found + 1
      if found > limit then
        out[1] = 1
        break
      end
      offset = offset + 1
      out[#out + 1] = name
      out[#out + 1] = pages
      if not users then out[#out + 1] = redis.call('zcard', mkey(app, name, 'order')) end
    end
  end
end
return out`;

// ARGV: prefix, node, lapse, now, pages per chunk, offline delay. Closes up to that many pages of the
// (dead) node as their own closes would (per page: presence rooms, rooms, then the user); answers 1
// when the node has none left (else 0), then kind, app, room, member JSON per departure ('l' member
// left, 'v' room vacated). The first chunk of each lapse sets the node's pages apart: should the node
// still be alive (it renews again), what it opens from then on is counted apart from what is swept.
const SWEEP_LUA = `${PRESENCE_LUA}
local node, lapse, now, count, delay = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local n, s, e = nkey(node), skey(node), ekey(node)
if tonumber(redis.call('get', e) or '0') < lapse then
  if redis.call('exists', n) == 1 then
    if redis.call('exists', s) == 1 then
      redis.call('sunionstore', s, s, n)
      redis.call('del', n)
    else
      redis.call('rename', n, s)
    end
  end
  -- Kept past any sweep of this lapse (a re-claim must not set apart again what the node opened since).
  redis.call('set', e, lapse, 'PX', 604800000)
end
local out = {0}
for _, page in ipairs(redis.call('spop', s, count)) do close_held(node, page, now, delay, out) end
if redis.call('exists', s) == 0 then out[1] = 1 end
return out`;

// ARGV: prefix, now, offline delay, pages... Closes what each page still holds, wherever it is
// counted (its node's set, or the set of a node being swept); answers as CHUNK_LUA, without the flag.
const CLOSE_PAGES_LUA = `${PRESENCE_LUA}
local now, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for n = 4, #ARGV do
  local page = ARGV[n]
  local node = node_of(page)
  redis.call('srem', nkey(node), page)
  redis.call('srem', skey(node), page)
  close_held(node, page, now, delay, out)
end
return out`;

/** Members per SSCAN step of a node's pages. */
const SCAN_COUNT = 500;

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

/**
 * Who is where, over every node sharing one Redis. Every call is one script, so an answer that starts
 * a webhook event (first page, last page, a claimed offline, a swept departure) reaches one caller.
 * A dead node's pages are closed by `sweepNode`, one chunk per script: a page is taken from the
 * node's set in the same script that closes it, so a sweeper that dies between chunks leaves the
 * rest for a later sweep and no departure is answered twice.
 */
export class RedisPresenceStore implements PresenceStore {
  readonly #client: RedisClient;
  readonly #delay: number;
  readonly #opened: Script;
  readonly #closed: Script;
  readonly #take: Script;
  readonly #online: Script;
  readonly #userPages: Script;
  readonly #enter: Script;
  readonly #exit: Script;
  readonly #join: Script;
  readonly #leave: Script;
  readonly #members: Script;
  readonly #page: Script;
  readonly #count: Script;
  readonly #list: Script;
  readonly #sweep: Script;
  readonly #closePages: Script;

  constructor(client: RedisClient, options: RedisPresenceOptions = {}) {
    this.#client = client;
    this.#delay = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
    this.#opened = client.script('rtPresenceOpened', OPENED_LUA);
    this.#closed = client.script('rtPresenceClosed', CLOSED_LUA);
    this.#take = client.script('rtPresenceTake', TAKE_LUA);
    this.#online = client.script('rtPresenceOnline', ONLINE_LUA);
    this.#userPages = client.script('rtPresenceUserPages', USER_PAGES_LUA);
    this.#enter = client.script('rtPresenceEnter', ENTER_LUA);
    this.#exit = client.script('rtPresenceExit', EXIT_LUA);
    this.#join = client.script('rtPresenceJoin', JOIN_LUA);
    this.#leave = client.script('rtPresenceLeave', LEAVE_LUA);
    this.#members = client.script('rtPresenceMembers', MEMBERS_LUA);
    this.#page = client.script('rtPresencePage', PAGE_LUA);
    this.#count = client.script('rtPresenceCount', COUNT_LUA);
    this.#list = client.script('rtPresenceList', LIST_LUA);
    this.#sweep = client.script('rtPresenceSweep', SWEEP_LUA);
    this.#closePages = client.script('rtPresenceClosePages', CLOSE_PAGES_LUA);
  }

  get #prefix(): string {
    return this.#client.prefix;
  }

  async pageOpened(app: string, user: string, page: string): Promise<boolean> {
    return (await this.#opened([], [this.#prefix, app, user, page])) === 1;
  }

  async pageClosed(app: string, user: string, page: string, nowMs: number): Promise<void> {
    await this.#closed([], [this.#prefix, app, user, page, nowMs, this.#delay]);
  }

  async takeOffline(nowMs: number, limit: number): Promise<GoneUser[]> {
    if (limit <= 0) return [];
    const reply = strings(await this.#take([], [this.#prefix, nowMs, Math.floor(limit)]));
    const gone: GoneUser[] = [];
    for (let i = 0; i + 1 < reply.length; i += 2) gone.push({ app: reply[i] ?? '', user: reply[i + 1] ?? '' });
    return gone;
  }

  async online(app: string, users: readonly string[], nowMs: number): Promise<boolean[]> {
    if (users.length === 0) return [];
    const reply = await this.#online([], [this.#prefix, app, nowMs, ...users]);
    return Array.isArray(reply) ? reply.map((on) => on === 1) : users.map(() => false);
  }

  async userPages(app: string, user: string): Promise<number> {
    return Number(await this.#userPages([], [this.#prefix, app, user]));
  }

  async enterRoom(app: string, room: string, page: string): Promise<boolean> {
    return (await this.#enter([], [this.#prefix, app, room, page])) === 1;
  }

  async exitRoom(app: string, room: string, page: string): Promise<boolean> {
    return (await this.#exit([], [this.#prefix, app, room, page])) === 1;
  }

  async joinRoom(app: string, room: string, member: Member, page: string): Promise<boolean> {
    return (await this.#join([], [this.#prefix, app, room, member.user, page, JSON.stringify(member)])) === 1;
  }

  async leaveRoom(app: string, room: string, user: string, page: string): Promise<boolean> {
    return (await this.#leave([], [this.#prefix, app, room, user, page])) === 1;
  }

  async members(app: string, room: string): Promise<Member[]> {
    return strings(await this.#members([], [this.#prefix, app, room, 0, -1])).map(toMember);
  }

  async memberPage(app: string, room: string, page: { after?: string; limit: number }): Promise<MemberPage> {
    // Cursors are sequence numbers this store gave; anything else starts from the first member.
    const after = page.after !== undefined && /^\d{1,16}$/.test(page.after) ? page.after : '0';
    const limit = Math.max(1, Math.floor(page.limit));
    const reply = strings(await this.#page([], [this.#prefix, app, room, after, limit]));
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
    const reply = strings(await this.#count([], [this.#prefix, app, room]));
    return { count: Number(reply[0] ?? 0), seq: Number(reply[1] ?? 0) };
  }

  async onlineUsers(app: string, range: NameRange): Promise<{ users: OnlineUser[]; more: boolean }> {
    const { more, rows } = await this.#listing(app, 'u', range);
    const users: OnlineUser[] = [];
    for (let i = 0; i + 1 < rows.length; i += 2) users.push({ user: rows[i] ?? '', pages: Number(rows[i + 1]) });
    return { users, more };
  }

  async occupiedRooms(app: string, range: NameRange): Promise<{ rooms: OccupiedRoom[]; more: boolean }> {
    const { more, rows } = await this.#listing(app, 'r', range);
    const rooms: OccupiedRoom[] = [];
    for (let i = 0; i + 2 < rows.length; i += 3) {
      rooms.push({ room: rows[i] ?? '', pages: Number(rows[i + 1]), members: Number(rows[i + 2]) });
    }
    return { rooms, more };
  }

  async #listing(app: string, kind: 'u' | 'r', range: NameRange): Promise<{ more: boolean; rows: string[] }> {
    const limit = Math.max(1, Math.floor(range.limit));
    const start = range.prefix ?? '';
    // The later of "after `after`" and "from the prefix on" (compared here: Lua compares by locale).
    let min = start === '' ? '-' : `[${start}`;
    if (range.after !== undefined && compareNames(range.after, start) >= 0) min = `(${range.after}`;
    const args = [this.#prefix, app, kind, limit, min, start];
    const reply = strings(await this.#list([], args));
    return { more: reply[0] === '1', rows: reply.slice(1) };
  }

  async sweepNode(claim: NodeClaim, nowMs: number, limit: number): Promise<{ departures: Departure[]; done: boolean }> {
    const count = Math.max(1, Math.floor(limit));
    const reply = strings(await this.#sweep([], [this.#prefix, claim.node, claim.lapse, nowMs, count, this.#delay]));
    return { departures: toDepartures(reply, 1), done: reply[0] === '1' };
  }

  /** SSCAN in bounded steps: a node's set can be large, and one SMEMBERS would hold Redis for all of it. */
  async nodePages(node: string): Promise<string[]> {
    const key = this.#client.key(`pr:n:{${node}}`);
    // SSCAN may give a member twice (the set grew meanwhile): a Set keeps each once.
    const pages = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await this.#client.call((redis) => redis.sscan(key, cursor, 'COUNT', SCAN_COUNT));
      cursor = next;
      for (const page of batch) pages.add(page);
    } while (cursor !== '0');
    return [...pages];
  }

  /** One script, so the departures of every page given reach this caller or none (callers give a few). */
  async closePages(pages: readonly string[], nowMs: number): Promise<Departure[]> {
    if (pages.length === 0) return [];
    return toDepartures(strings(await this.#closePages([], [this.#prefix, nowMs, this.#delay, ...pages])), 0);
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}

/** The departures a closing script answered from `start`: kind, app, room, member JSON each. */
function toDepartures(reply: readonly string[], start: number): Departure[] {
  const departures: Departure[] = [];
  for (let i = start; i + 3 < reply.length; i += 4) {
    const app = reply[i + 1] ?? '';
    const room = reply[i + 2] ?? '';
    if (reply[i] === 'v') departures.push({ type: 'room.vacated', app, room });
    else departures.push({ type: 'member.left', app, room, member: toMember(reply[i + 3] ?? '') });
  }
  return departures;
}
