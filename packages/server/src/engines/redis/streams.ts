import type {
  LapsedStreamMember,
  StreamChange,
  StreamMember,
  StreamState,
  StreamStore,
  StreamWatch,
} from '../types.js';
import type { RedisClient, Script } from './client.js';

/**
 * Lua shared by the stream scripts. ARGV[1] is always the key prefix: the sweep names keys from what
 * it finds, so every stream key is named here and nowhere else. Like groups, streams live on one
 * Redis; hash tags still keep each app's keys together. Times pass through as the caller's strings
 * (Lua's numbers would round them); only the watch counter is counted here.
 *
 * Keys (after the prefix):
 * - `stream:{<app>}:m:<stream>` hash of page -> the member's JSON (page, user, role); it decides who
 *   is on and how many;
 * - `stream:{<app>}:o:<stream>` list of the same pages in join order;
 * - `stream:{<app>}:s:<stream>` hash: `presenter` (page), and while live `run`, `since`, `n` (the
 *   last watch number of the run);
 * - `stream:{<app>}:w:<stream>` hash of page -> `<joinedAt>|<watch id>`: the open watches, while live;
 * - `stream:n:{<node>}` set of the streams (`<app>:<stream>`; app keys hold no ':') with a page on the
 *   node: where `takeNode` finds them once the node died (the node leases are NodeStore's).
 * A stream's keys go with its last member, and expire a week after its last change: a safety net
 * only, since every member leaves by `leave` or with its page's node.
 * A page's node is its id up to the first '.' (`<node>.<n>`; an id without one is its own node).
 *
 * A change goes back as { live, ended start, ended end, joined, left } ('' for none), each watch as
 * { member JSON, watch id, joinedAt[, leftAt] }, in join order.
 */
const STREAMS_LUA = `
local P = ARGV[1]
local KEEP_MS = 604800000
local function key(kind, app, stream) return P .. 'stream:{' .. app .. '}:' .. kind .. ':' .. stream end
local function nkey(node) return P .. 'stream:n:{' .. node .. '}' end
local function node_of(page)
  local dot = string.find(page, '.', 1, true)
  if dot then return string.sub(page, 1, dot - 1) end
  return page
end

local function split(entry)
  local colon = string.find(entry, ':', 1, true)
  return string.sub(entry, 1, colon - 1), string.sub(entry, colon + 1)
end

local function new_change() return { '', '', '', {}, {} } end

-- Whether another page of the node is on the stream still.
local function node_in(m, node)
  for _, page in ipairs(redis.call('hkeys', m)) do
    if node_of(page) == node then return true end
  end
  return false
end

local function keep(app, stream)
  for _, kind in ipairs({ 'm', 'o', 's', 'w' }) do redis.call('pexpire', key(kind, app, stream), KEEP_MS) end
end

-- Opens the member's watch in the live run (none for a visitor) and reports it.
local function open_watch(app, stream, page, json, now, change)
  if cjson.decode(json).user == nil then return end
  local s = key('s', app, stream)
  local id = redis.call('hget', s, 'run') .. '.' .. redis.call('hincrby', s, 'n', 1)
  redis.call('hset', key('w', app, stream), page, now .. '|' .. id)
  table.insert(change[4], { json, id, now })
end

-- Closes the page's open watch, if any, and reports it.
local function close_watch(app, stream, page, now, change)
  local w = key('w', app, stream)
  local open = redis.call('hget', w, page)
  if not open then return end
  local bar = string.find(open, '|', 1, true)
  local json = redis.call('hget', key('m', app, stream), page)
  table.insert(change[5], { json, string.sub(open, bar + 1), string.sub(open, 1, bar - 1), now })
  redis.call('hdel', w, page)
end

-- Ends the live run: every open watch closes, in join order.
local function end_run(app, stream, now, change)
  local s = key('s', app, stream)
  for _, page in ipairs(redis.call('lrange', key('o', app, stream), 0, -1)) do
    close_watch(app, stream, page, now, change)
  end
  change[2] = redis.call('hget', s, 'since') or ''
  change[3] = now
  redis.call('hdel', s, 'run', 'since', 'n')
  redis.call('del', key('w', app, stream))
end

-- Takes the page off (it must be on), as leave does; the stream's keys go with its last member.
local function remove(app, stream, page, now, change)
  local m, o, s = key('m', app, stream), key('o', app, stream), key('s', app, stream)
  if redis.call('hget', s, 'presenter') == page then
    if redis.call('hexists', s, 'run') == 1 then end_run(app, stream, now, change) end
    redis.call('hdel', s, 'presenter')
  else
    close_watch(app, stream, page, now, change)
  end
  redis.call('hdel', m, page)
  redis.call('lrem', o, 1, page)
  local node = node_of(page)
  if not node_in(m, node) then redis.call('srem', nkey(node), app .. ':' .. stream) end
  if redis.call('hlen', m) == 0 then
    redis.call('del', m, o, s, key('w', app, stream))
  else
    keep(app, stream)
  end
end
`;

// ARGV: prefix, app, stream, page, max, member JSON, role, now. Answers 'already', 'taken', 'full',
// or { presenter, since, change } ('' for none).
const JOIN_LUA = `${STREAMS_LUA}
local app, stream, page, now = ARGV[2], ARGV[3], ARGV[4], ARGV[8]
local m, s = key('m', app, stream), key('s', app, stream)
if redis.call('hexists', m, page) == 1 then return 'already' end
if ARGV[7] == 'presenter' and redis.call('hexists', s, 'presenter') == 1 then return 'taken' end
if redis.call('hlen', m) >= tonumber(ARGV[5]) then return 'full' end
redis.call('hset', m, page, ARGV[6])
redis.call('rpush', key('o', app, stream), page)
if ARGV[7] == 'presenter' then redis.call('hset', s, 'presenter', page) end
local change = new_change()
if redis.call('hexists', s, 'run') == 1 then open_watch(app, stream, page, ARGV[6], now, change) end
keep(app, stream)
redis.call('sadd', nkey(node_of(page)), app .. ':' .. stream)
return { redis.call('hget', s, 'presenter') or '', redis.call('hget', s, 'since') or '', change }`;

// ARGV: prefix, app, stream, page, now. Answers { member JSON, change } to the one caller that took
// the page off, else false.
const LEAVE_LUA = `${STREAMS_LUA}
local app, stream, page = ARGV[2], ARGV[3], ARGV[4]
local m = key('m', app, stream)
local json = redis.call('hget', m, page)
if not json then
  -- A stream that expired leaves its name in the node's set: it goes once no page of the node is there.
  local node = node_of(page)
  if not node_in(m, node) then redis.call('srem', nkey(node), app .. ':' .. stream) end
  return false
end
local change = new_change()
remove(app, stream, page, ARGV[5], change)
return { json, change }`;

// ARGV: prefix, app, stream, page, run, now. Answers the change, or false unless the page presents
// a stream not live.
const GO_LIVE_LUA = `${STREAMS_LUA}
local app, stream, page, now = ARGV[2], ARGV[3], ARGV[4], ARGV[6]
local m, s = key('m', app, stream), key('s', app, stream)
if redis.call('hget', s, 'presenter') ~= page or redis.call('hexists', s, 'run') == 1 then return false end
redis.call('hset', s, 'run', ARGV[5], 'since', now, 'n', 0)
local change = new_change()
change[1] = now
for _, p in ipairs(redis.call('lrange', key('o', app, stream), 0, -1)) do
  local json = redis.call('hget', m, p)
  if json then open_watch(app, stream, p, json, now, change) end
end
keep(app, stream)
return change`;

// ARGV: prefix, app, stream, page, now. Answers the change, or false unless the page presents a live stream.
const STOP_LIVE_LUA = `${STREAMS_LUA}
local app, stream, page, now = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local s = key('s', app, stream)
if redis.call('hget', s, 'presenter') ~= page or redis.call('hexists', s, 'run') == 0 then return false end
local change = new_change()
end_run(app, stream, now, change)
keep(app, stream)
return change`;

// ARGV: prefix, app, stream. Answers { presenter, since } ('' for none).
const STATE_LUA = `${STREAMS_LUA}
local s = key('s', ARGV[2], ARGV[3])
return { redis.call('hget', s, 'presenter') or '', redis.call('hget', s, 'since') or '' }`;

// ARGV: prefix, app, stream. The members' JSON in join order (the hash decides who is on).
const MEMBERS_LUA = `${STREAMS_LUA}
local m, out = key('m', ARGV[2], ARGV[3]), {}
for _, page in ipairs(redis.call('lrange', key('o', ARGV[2], ARGV[3]), 0, -1)) do
  local json = redis.call('hget', m, page)
  if json then out[#out + 1] = json end
end
return out`;

// ARGV: prefix, node, now, limit. Answers { app, stream, member JSON, change } for the members of
// the (dead) node, in each stream's join order. Takes each off as it answers it, so each reaches one
// caller.
const TAKE_LUA = `${STREAMS_LUA}
local node, now, limit = ARGV[2], ARGV[3], tonumber(ARGV[4])
local n = nkey(node)
local out = {}
while #out < limit do
  local found = redis.call('srandmember', n, limit - #out)
  if #found == 0 then break end
  for _, entry in ipairs(found) do
    if #out >= limit then break end
    local app, stream = split(entry)
    local m = key('m', app, stream)
    local full = false
    for _, page in ipairs(redis.call('lrange', key('o', app, stream), 0, -1)) do
      if node_of(page) == node then
        if #out >= limit then
          full = true
          break
        end
        local json = redis.call('hget', m, page)
        if json then
          local change = new_change()
          remove(app, stream, page, now, change)
          out[#out + 1] = { app, stream, json, change }
        end
      end
    end
    -- Every page of the node is off this stream (or it expired): the name goes either way.
    if not full then redis.call('srem', n, entry) end
  end
end
return out`;

/** A member from its stored JSON; undefined when it cannot be read (nothing of ours wrote it). */
function toMember(json: unknown): StreamMember | undefined {
  if (typeof json !== 'string' && !Buffer.isBuffer(json)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(json));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { page, user, role } = parsed as Record<string, unknown>;
  if (typeof page !== 'string' || (role !== 'presenter' && role !== 'viewer')) return undefined;
  return typeof user === 'string' ? { page, user, role } : { page, role };
}

/** A watch from `{ member JSON, id, joinedAt }`; undefined for a member without a user (none is stored). */
function toWatch(reply: unknown): StreamWatch | undefined {
  if (!Array.isArray(reply)) return undefined;
  const member = toMember(reply[0]);
  if (member?.user === undefined) return undefined;
  return { watch: String(reply[1]), user: member.user, role: member.role, joinedAt: Number(reply[2]) };
}

/** A change from the scripts' `{ live, ended start, ended end, joined, left }`. */
function toChange(reply: unknown): StreamChange {
  const change: StreamChange = { joined: [], left: [] };
  if (!Array.isArray(reply)) return change;
  const [live, startedAt, endedAt, joined, left] = reply as unknown[];
  if (live !== '' && live !== undefined) change.live = Number(live);
  if (endedAt !== '' && endedAt !== undefined)
    change.ended = { startedAt: Number(startedAt), endedAt: Number(endedAt) };
  if (Array.isArray(joined)) {
    for (const w of joined) {
      const watch = toWatch(w);
      if (watch) change.joined.push(watch);
    }
  }
  if (Array.isArray(left)) {
    for (const w of left) {
      const watch = toWatch(w);
      if (watch) change.left.push({ ...watch, leftAt: Number((w as unknown[])[3]) });
    }
  }
  return change;
}

function toState(presenter: unknown, since: unknown): StreamState {
  const state: StreamState = {};
  if (typeof presenter === 'string' && presenter !== '') state.presenter = presenter;
  if (since !== '' && since !== undefined && since !== null) state.liveSince = Number(since);
  return state;
}

/** `max` as Lua compares it: a whole number (Infinity and NaN are no numbers there). */
function capOf(max: number): number {
  if (Number.isNaN(max)) return 0;
  return Number.isFinite(max) ? Math.ceil(max) : max > 0 ? Number.MAX_SAFE_INTEGER : 0;
}

/**
 * Live streams on Redis, shared by every node: each change is one script, so a stream never has two
 * presenters nor more than `max` pages however many nodes join at once, and each change (its watches
 * opened and closed, its run started or ended) reaches one caller, by `leave` or with its page's node
 * (`takeNode`).
 */
export class RedisStreamStore implements StreamStore {
  readonly #client: RedisClient;
  readonly #join: Script;
  readonly #leave: Script;
  readonly #goLive: Script;
  readonly #stopLive: Script;
  readonly #state: Script;
  readonly #members: Script;
  readonly #take: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#join = client.script('rtStreamJoin', JOIN_LUA);
    this.#leave = client.script('rtStreamLeave', LEAVE_LUA);
    this.#goLive = client.script('rtStreamGoLive', GO_LIVE_LUA);
    this.#stopLive = client.script('rtStreamStopLive', STOP_LIVE_LUA);
    this.#state = client.script('rtStreamState', STATE_LUA);
    this.#members = client.script('rtStreamMembers', MEMBERS_LUA);
    this.#take = client.script('rtStreamTake', TAKE_LUA);
  }

  get #prefix(): string {
    return this.#client.prefix;
  }

  async join(
    app: string,
    stream: string,
    member: StreamMember,
    max: number,
    nowMs: number,
  ): Promise<{ state: StreamState; change: StreamChange } | 'taken' | 'full' | 'already'> {
    // Only the member's own fields, so what comes back is what was given.
    const json = JSON.stringify({ page: member.page, user: member.user, role: member.role });
    const reply = await this.#join(
      [],
      [this.#prefix, app, stream, member.page, capOf(max), json, member.role, String(nowMs)],
    );
    if (reply === 'taken' || reply === 'full' || reply === 'already') return reply;
    const [presenter, since, change] = Array.isArray(reply) ? (reply as unknown[]) : [];
    return { state: toState(presenter, since), change: toChange(change) };
  }

  async leave(
    app: string,
    stream: string,
    page: string,
    nowMs: number,
  ): Promise<{ member: StreamMember; change: StreamChange } | undefined> {
    const reply = await this.#leave([], [this.#prefix, app, stream, page, String(nowMs)]);
    if (!Array.isArray(reply)) return undefined;
    const member = toMember(reply[0]);
    return member && { member, change: toChange(reply[1]) };
  }

  async goLive(
    app: string,
    stream: string,
    page: string,
    run: string,
    nowMs: number,
  ): Promise<StreamChange | undefined> {
    const reply = await this.#goLive([], [this.#prefix, app, stream, page, run, String(nowMs)]);
    return Array.isArray(reply) ? toChange(reply) : undefined;
  }

  async stopLive(app: string, stream: string, page: string, nowMs: number): Promise<StreamChange | undefined> {
    const reply = await this.#stopLive([], [this.#prefix, app, stream, page, String(nowMs)]);
    return Array.isArray(reply) ? toChange(reply) : undefined;
  }

  async state(app: string, stream: string): Promise<StreamState> {
    const reply = await this.#state([], [this.#prefix, app, stream]);
    const [presenter, since] = Array.isArray(reply) ? (reply as unknown[]) : [];
    return toState(presenter, since);
  }

  async members(app: string, stream: string): Promise<StreamMember[]> {
    const reply = await this.#members([], [this.#prefix, app, stream]);
    return Array.isArray(reply) ? reply.map(toMember).filter((m): m is StreamMember => m !== undefined) : [];
  }

  async takeNode(node: string, nowMs: number, limit: number): Promise<LapsedStreamMember[]> {
    if (!(limit > 0)) return [];
    const reply = await this.#take(
      [],
      [this.#prefix, node, String(nowMs), Number.isFinite(limit) ? Math.ceil(limit) : 1_000_000],
    );
    const lapsed: LapsedStreamMember[] = [];
    if (!Array.isArray(reply)) return lapsed;
    for (const row of reply) {
      if (!Array.isArray(row)) continue;
      const member = toMember(row[2]);
      if (member) lapsed.push({ app: String(row[0]), stream: String(row[1]), member, change: toChange(row[3]) });
    }
    return lapsed;
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}
