import { LIMITS, type Member } from '@realtime/protocol';
import type { Departure, GoneUser, PresenceStore } from '../types.js';
import type { RedisClient, Script } from './client.js';
import { memberKeys, nodePagesKey, roomPagesKey, userPagesKey } from './keys.js';

/** Dead nodes swept per call; the rest on the next (sweeps run every couple of seconds). */
const NODES_PER_SWEEP = 10;

// KEYS: user's pages, pr:off, node's index. ARGV: <app>:<user>, page, index entry. 1: came online.
const OPEN_LUA = `
local known = redis.call('scard', KEYS[1]) > 0 or redis.call('zscore', KEYS[2], ARGV[1])
redis.call('sadd', KEYS[1], ARGV[2])
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('sadd', KEYS[3], ARGV[3])
if known then return 0 end
return 1`;

// KEYS: user's pages, pr:off, node's index. ARGV: <app>:<user>, page, index entry, when offline is due.
const CLOSE_LUA = `
if redis.call('srem', KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('srem', KEYS[3], ARGV[3])
if redis.call('scard', KEYS[1]) == 0 then redis.call('zadd', KEYS[2], ARGV[4], ARGV[1]) end
return 1`;

// KEYS: pr:off. ARGV: now, limit. Each due user is handed out once: taken out in the same step.
const TAKE_LUA = `
if tonumber(ARGV[2]) <= 0 then return {} end
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #due > 0 then redis.call('zrem', KEYS[1], unpack(due)) end
return due`;

// KEYS: pr:off, then each user's pages. ARGV: now, then each <app>:<user>.
const ONLINE_LUA = `
local now, out = tonumber(ARGV[1]), {}
for n = 2, #KEYS do
  local online = redis.call('exists', KEYS[n]) == 1
  if not online then
    local due = redis.call('zscore', KEYS[1], ARGV[n])
    online = due ~= false and now < tonumber(due)
  end
  out[#out + 1] = online and 1 or 0
end
return out`;

// KEYS: room's pages, node's index. ARGV: page, index entry. 1: the room had no page.
const ENTER_LUA = `
if redis.call('sadd', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('sadd', KEYS[2], ARGV[2])
if redis.call('scard', KEYS[1]) == 1 then return 1 end
return 0`;

// KEYS: room's pages, node's index. ARGV: page, index entry. 1: it was the room's last page.
const EXIT_LUA = `
if redis.call('srem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('srem', KEYS[2], ARGV[2])
if redis.call('scard', KEYS[1]) == 0 then return 1 end
return 0`;

/**
 * Shared by leave and sweep: takes a page of a user out of a presence room (keys: order, info, pages,
 * count, seq); answers the member JSON when it was the user's last page there, else nil.
 */
const LEAVE_FN = `
local function leave(k, user, page)
  if redis.call('hget', k[3], page) ~= user then return nil end
  redis.call('hdel', k[3], page)
  if redis.call('hincrby', k[4], user, -1) > 0 then return nil end
  local member = redis.call('hget', k[2], user)
  redis.call('hdel', k[4], user)
  redis.call('hdel', k[2], user)
  redis.call('zrem', k[1], user)
  if redis.call('zcard', k[1]) == 0 then redis.call('del', k[5]) end
  return member or '{}'
end
`;

// KEYS: order, info, pages, count, seq, node's index. ARGV: user, page, member JSON, index entry.
const JOIN_LUA = `
if redis.call('hsetnx', KEYS[3], ARGV[2], ARGV[1]) == 0 then return 0 end
redis.call('sadd', KEYS[6], ARGV[4])
if redis.call('hincrby', KEYS[4], ARGV[1], 1) > 1 then return 0 end
redis.call('zadd', KEYS[1], redis.call('incr', KEYS[5]), ARGV[1])
redis.call('hset', KEYS[2], ARGV[1], ARGV[3])
return 1`;

// KEYS: order, info, pages, count, seq, node's index. ARGV: user, page, index entry.
const LEAVE_LUA = `${LEAVE_FN}
local left = leave(KEYS, ARGV[1], ARGV[2])
redis.call('srem', KEYS[6], ARGV[3])
if left then return 1 end
return 0`;

// KEYS: order, info.
const MEMBERS_LUA = `
local users = redis.call('zrange', KEYS[1], 0, -1)
if #users == 0 then return {} end
return redis.call('hmget', KEYS[2], unpack(users))`;

// KEYS: pr:nodes, pr:off. ARGV: prefix, now, offline delay, nodes per call. Claims dead nodes and
// takes their pages out as their closes would have, in one step: each node is swept once.
// Answers {type, app, room, member JSON or '', ...}.
const SWEEP_LUA = `${LEAVE_FN}
local P, now, delay = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
local function sweep_entry(e)
  if e[1] == 'm' then
    local base = P .. 'pr:m:{' .. e[2] .. ':' .. e[3] .. '}'
    local k = {base .. ':order', base .. ':info', base .. ':pages', base .. ':count', base .. ':seq'}
    local member = leave(k, e[4], e[5])
    if member then
      out[#out + 1] = 'member.left'; out[#out + 1] = e[2]; out[#out + 1] = e[3]; out[#out + 1] = member
    end
  elseif e[1] == 'r' then
    local pages = P .. 'pr:r:{' .. e[2] .. ':' .. e[3] .. '}'
    if redis.call('srem', pages, e[4]) == 1 and redis.call('scard', pages) == 0 then
      out[#out + 1] = 'room.vacated'; out[#out + 1] = e[2]; out[#out + 1] = e[3]; out[#out + 1] = ''
    end
  elseif e[1] == 'u' then
    local pages = P .. 'pr:u:{' .. e[2] .. ':' .. e[3] .. '}'
    if redis.call('srem', pages, e[4]) == 1 and redis.call('scard', pages) == 0 then
      redis.call('zadd', KEYS[2], now + delay, e[2] .. ':' .. e[3])
    end
  end
end
for _, node in ipairs(redis.call('zrangebyscore', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[4])) do
  redis.call('zrem', KEYS[1], node)
  local index = P .. 'pr:n:' .. node
  -- Members leave first, then rooms are vacated, as with a page's own close.
  local later = {}
  for _, text in ipairs(redis.call('smembers', index)) do
    local ok, e = pcall(cjson.decode, text)
    if ok and type(e) == 'table' then
      if e[1] == 'm' then sweep_entry(e) else later[#later + 1] = e end
    end
  end
  for _, e in ipairs(later) do sweep_entry(e) end
  redis.call('del', index)
end
return out`;

/** The node a page belongs to: page ids are `<node>.<n>` (gateway); an id without a dot is its own. */
function nodeOf(page: string): string {
  const dot = page.indexOf('.');
  return dot < 0 ? page : page.slice(0, dot);
}

const member = (app: string, user: string): string => `${app}:${user}`;

/**
 * Who is where, over every node, in Redis: each step that answers "first" or "last" is one script,
 * so exactly one caller gets each `true`. Every page's place is also listed under its node, so the
 * pages of a node that died without closing them can be swept (see keys.ts for the keys).
 */
export class RedisPresenceStore implements PresenceStore {
  readonly #client: RedisClient;
  readonly #offlineDelayMs: number;
  readonly #open: Script;
  readonly #close: Script;
  readonly #take: Script;
  readonly #online: Script;
  readonly #enter: Script;
  readonly #exit: Script;
  readonly #join: Script;
  readonly #leave: Script;
  readonly #members: Script;
  readonly #sweep: Script;

  constructor(client: RedisClient, options: { offlineDelayMs?: number } = {}) {
    this.#client = client;
    this.#offlineDelayMs = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
    this.#open = client.script('rtPresenceOpen', OPEN_LUA);
    this.#close = client.script('rtPresenceClose', CLOSE_LUA);
    this.#take = client.script('rtPresenceTake', TAKE_LUA);
    this.#online = client.script('rtPresenceOnline', ONLINE_LUA);
    this.#enter = client.script('rtPresenceEnter', ENTER_LUA);
    this.#exit = client.script('rtPresenceExit', EXIT_LUA);
    this.#join = client.script('rtPresenceJoin', JOIN_LUA);
    this.#leave = client.script('rtPresenceLeave', LEAVE_LUA);
    this.#members = client.script('rtPresenceMembers', MEMBERS_LUA);
    this.#sweep = client.script('rtPresenceSweep', SWEEP_LUA);
  }

  get #prefix(): string {
    return this.#client.prefix;
  }

  #off(): string {
    return this.#client.key('pr:off');
  }

  #index(page: string): string {
    return nodePagesKey(this.#prefix, nodeOf(page));
  }

  async pageOpened(app: string, user: string, page: string): Promise<boolean> {
    const keys = [userPagesKey(this.#prefix, app, user), this.#off(), this.#index(page)];
    return (await this.#open(keys, [member(app, user), page, JSON.stringify(['u', app, user, page])])) === 1;
  }

  async pageClosed(app: string, user: string, page: string, nowMs: number): Promise<void> {
    const keys = [userPagesKey(this.#prefix, app, user), this.#off(), this.#index(page)];
    const entry = JSON.stringify(['u', app, user, page]);
    await this.#close(keys, [member(app, user), page, entry, Math.floor(nowMs) + this.#offlineDelayMs]);
  }

  async takeOffline(nowMs: number, limit: number): Promise<GoneUser[]> {
    const due = await this.#take([this.#off()], [Math.floor(nowMs), Math.max(0, Math.floor(limit))]);
    return (Array.isArray(due) ? due : []).map((text) => {
      const value = String(text);
      const colon = value.indexOf(':');
      return { app: value.slice(0, colon), user: value.slice(colon + 1) };
    });
  }

  async online(app: string, users: readonly string[], nowMs: number): Promise<boolean[]> {
    if (users.length === 0) return [];
    const keys = [this.#off(), ...users.map((user) => userPagesKey(this.#prefix, app, user))];
    const reply = await this.#online(keys, [Math.floor(nowMs), ...users.map((user) => member(app, user))]);
    return (Array.isArray(reply) ? reply : []).map((answer) => answer === 1);
  }

  async userPages(app: string, user: string): Promise<number> {
    return this.#client.call((redis) => redis.scard(userPagesKey(this.#prefix, app, user)));
  }

  async enterRoom(app: string, room: string, page: string): Promise<boolean> {
    const keys = [roomPagesKey(this.#prefix, app, room), this.#index(page)];
    return (await this.#enter(keys, [page, JSON.stringify(['r', app, room, page])])) === 1;
  }

  async exitRoom(app: string, room: string, page: string): Promise<boolean> {
    const keys = [roomPagesKey(this.#prefix, app, room), this.#index(page)];
    return (await this.#exit(keys, [page, JSON.stringify(['r', app, room, page])])) === 1;
  }

  async joinRoom(app: string, room: string, joining: Member, page: string): Promise<boolean> {
    const keys = [...memberKeys(this.#prefix, app, room), this.#index(page)];
    const entry = JSON.stringify(['m', app, room, joining.user, page]);
    return (await this.#join(keys, [joining.user, page, JSON.stringify(joining), entry])) === 1;
  }

  async leaveRoom(app: string, room: string, user: string, page: string): Promise<boolean> {
    const keys = [...memberKeys(this.#prefix, app, room), this.#index(page)];
    return (await this.#leave(keys, [user, page, JSON.stringify(['m', app, room, user, page])])) === 1;
  }

  async members(app: string, room: string): Promise<Member[]> {
    const [order, info] = memberKeys(this.#prefix, app, room);
    const reply = await this.#members([order, info], []);
    const members: Member[] = [];
    for (const text of Array.isArray(reply) ? reply : []) {
      if (typeof text === 'string') members.push(JSON.parse(text) as Member);
    }
    return members;
  }

  async renew(node: string, nowMs: number, leaseMs: number): Promise<void> {
    await this.#client.call((redis) => redis.zadd(this.#client.key('pr:nodes'), Math.floor(nowMs + leaseMs), node));
  }

  async sweep(nowMs: number): Promise<Departure[]> {
    const reply = await this.#sweep(
      [this.#client.key('pr:nodes'), this.#off()],
      [this.#prefix, Math.floor(nowMs), this.#offlineDelayMs, NODES_PER_SWEEP],
    );
    const parts = Array.isArray(reply) ? reply.map(String) : [];
    const departures: Departure[] = [];
    for (let i = 0; i + 3 < parts.length; i += 4) {
      const [type, app = '', room = '', text = ''] = parts.slice(i, i + 4);
      if (type === 'room.vacated') departures.push({ type, app, room });
      else if (type === 'member.left') departures.push({ type, app, room, member: JSON.parse(text) as Member });
    }
    return departures;
  }

  close(): void {
    // Pages stay counted until they close or their node's lease ends; the client is the engine's.
  }
}
