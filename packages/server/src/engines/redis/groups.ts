import type { GroupJoin, GroupLimits, GroupMember, GroupStore, LapsedMember } from '../types.js';
import type { RedisClient, Script } from './client.js';

/**
 * Lua shared by the group scripts. ARGV[1] is always the key prefix: the sweep names keys from what
 * it finds, so every group key is named here and nowhere else. Like calls, groups live on one Redis;
 * hash tags still keep each app's keys together.
 *
 * Keys (after the prefix):
 * - `group:{<app>}:m:<group>` hash of page -> the member's JSON (page, user, media, joinedAt);
 *   it decides who is in and how many;
 * - `group:{<app>}:o:<group>` list of the same pages in join order;
 * - `group:{<app>}:u:<group>` '1' while the group is in unit mode: set by the join that brought it to
 *   `unitFrom` pages, gone with its last member (so the next group of that name starts in mesh);
 * - `group:n:{<node>}` set of the groups (`<app>:<group>`; app keys hold no ':') with a page on the
 *   node: where `takeNode` finds them once the node died (the node leases are NodeStore's).
 * A group's keys go with its last member, and expire a week after its last join or leave: a
 * safety net only, since every member leaves by `leave` or with its page's node.
 * A page's node is its id up to the first '.' (`<node>.<n>`; an id without one is its own node).
 */
const GROUPS_LUA = `
local P = ARGV[1]
local KEEP_MS = 604800000
local function mkey(app, group) return P .. 'group:{' .. app .. '}:m:' .. group end
local function okey(app, group) return P .. 'group:{' .. app .. '}:o:' .. group end
local function ukey(app, group) return P .. 'group:{' .. app .. '}:u:' .. group end
local function nkey(node) return P .. 'group:n:{' .. node .. '}' end
local function node_of(page)
  local dot = string.find(page, '.', 1, true)
  if dot then return string.sub(page, 1, dot - 1) end
  return page
end

local function split(entry)
  local colon = string.find(entry, ':', 1, true)
  return string.sub(entry, 1, colon - 1), string.sub(entry, colon + 1)
end

-- The members' JSON in join order (the hash decides who is in; one HGET each: groups are small).
local function in_order(app, group)
  local m, out = mkey(app, group), {}
  for _, page in ipairs(redis.call('lrange', okey(app, group), 0, -1)) do
    local json = redis.call('hget', m, page)
    if json then out[#out + 1] = json end
  end
  return out
end

-- Whether another page of the node is in the group still.
local function node_in(m, node)
  for _, page in ipairs(redis.call('hkeys', m)) do
    if node_of(page) == node then return true end
  end
  return false
end

-- Takes the page out (it must be in); the group's keys go with its last member.
local function remove(app, group, page)
  local m, o, u = mkey(app, group), okey(app, group), ukey(app, group)
  redis.call('hdel', m, page)
  redis.call('lrem', o, 1, page)
  local node = node_of(page)
  if not node_in(m, node) then redis.call('srem', nkey(node), app .. ':' .. group) end
  if redis.call('hlen', m) == 0 then
    redis.call('del', m, o, u)
  else
    redis.call('pexpire', m, KEEP_MS)
    redis.call('pexpire', o, KEEP_MS)
    redis.call('pexpire', u, KEEP_MS)
  end
end
`;

// ARGV: prefix, app, group, page, max, member JSON, unitFrom. Answers 'already', 'full', or
// {unit, switched, before}: 1 or 0 each, and the JSON of the members before, in join order (a
// table, so an empty group answers an empty array).
const JOIN_LUA = `${GROUPS_LUA}
local app, group, page = ARGV[2], ARGV[3], ARGV[4]
local m, o, u = mkey(app, group), okey(app, group), ukey(app, group)
if redis.call('hexists', m, page) == 1 then return 'already' end
local count = redis.call('hlen', m)
if count >= tonumber(ARGV[5]) then return 'full' end
-- A group with no member is a new one: no mode left from one whose keys expired apart.
if count == 0 then redis.call('del', u) end
local before = in_order(app, group)
redis.call('hset', m, page, ARGV[6])
redis.call('rpush', o, page)
-- At or past the threshold, so a group whose threshold was lowered (another node's settings)
-- switches at its next join; once, since the key stays until the group is empty.
local switched = 0
if redis.call('exists', u) == 0 and count + 1 >= tonumber(ARGV[7]) then
  redis.call('set', u, '1')
  switched = 1
end
local unit = redis.call('exists', u)
redis.call('pexpire', m, KEEP_MS)
redis.call('pexpire', o, KEEP_MS)
redis.call('pexpire', u, KEEP_MS)
redis.call('sadd', nkey(node_of(page)), app .. ':' .. group)
return {unit, switched, before}`;

// ARGV: prefix, app, group, page. Answers the member's JSON to the one caller that took it out, else false.
const LEAVE_LUA = `${GROUPS_LUA}
local app, group, page = ARGV[2], ARGV[3], ARGV[4]
local m = mkey(app, group)
local json = redis.call('hget', m, page)
if not json then
  -- A group that expired leaves its name in the node's set: it goes once no page of the node is there.
  local node = node_of(page)
  if not node_in(m, node) then redis.call('srem', nkey(node), app .. ':' .. group) end
  return false
end
remove(app, group, page)
return json`;

// ARGV: prefix, app, group. The members' JSON in join order.
const MEMBERS_LUA = `${GROUPS_LUA}
return in_order(ARGV[2], ARGV[3])`;

// ARGV: prefix, app, group. 1 while the group is in unit mode, else 0.
const UNIT_LUA = `${GROUPS_LUA}
return redis.call('exists', ukey(ARGV[2], ARGV[3]))`;

// ARGV: prefix, node, limit. Answers app, group, member JSON, app, group, ...: the members of the
// (dead) node, in each group's join order. Removes each member it answers, so each reaches one caller.
const TAKE_LUA = `${GROUPS_LUA}
local node, limit = ARGV[2], tonumber(ARGV[3])
local n = nkey(node)
local out, taken = {}, 0
while taken < limit do
  local found = redis.call('srandmember', n, limit - taken)
  if #found == 0 then break end
  for _, entry in ipairs(found) do
    if taken >= limit then break end
    local app, group = split(entry)
    local m = mkey(app, group)
    local full = false
    for _, page in ipairs(redis.call('lrange', okey(app, group), 0, -1)) do
      if node_of(page) == node then
        if taken >= limit then
          full = true
          break
        end
        local json = redis.call('hget', m, page)
        if json then
          remove(app, group, page)
          out[#out + 1] = app
          out[#out + 1] = group
          out[#out + 1] = json
          taken = taken + 1
        end
      end
    end
    -- Every page of the node is out of this group (or it expired): the name goes either way.
    if not full then redis.call('srem', n, entry) end
  end
end
return out`;

/** A member from its stored JSON; undefined when it cannot be read (nothing of ours wrote it). */
function toMember(json: unknown): GroupMember | undefined {
  if (typeof json !== 'string' && !Buffer.isBuffer(json)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(json));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { page, user, media, joinedAt } = parsed as Record<string, unknown>;
  if (typeof page !== 'string' || typeof user !== 'string' || typeof joinedAt !== 'number') return undefined;
  return {
    page,
    user,
    media: Array.isArray(media) ? media.filter((m): m is 'audio' | 'video' => m === 'audio' || m === 'video') : [],
    joinedAt,
  };
}

const membersOf = (reply: unknown): GroupMember[] =>
  Array.isArray(reply) ? reply.map(toMember).filter((m): m is GroupMember => m !== undefined) : [];

/** `max` or `unitFrom` as Lua compares it: a whole number (Infinity and NaN are no numbers there). */
function capOf(max: number): number {
  if (Number.isNaN(max)) return 0;
  return Number.isFinite(max) ? Math.ceil(max) : max > 0 ? Number.MAX_SAFE_INTEGER : 0;
}

/**
 * Group calls on Redis, shared by every node: each change is one script, so a group never holds more
 * than `max` pages however many nodes join at once, exactly one join switches it to unit mode, and a
 * member that leaves (by `leave` or with its page's node, `takeNode`) reaches one caller.
 */
export class RedisGroupStore implements GroupStore {
  readonly #client: RedisClient;
  readonly #join: Script;
  readonly #leave: Script;
  readonly #members: Script;
  readonly #unit: Script;
  readonly #take: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#join = client.script('rtGroupJoin', JOIN_LUA);
    this.#leave = client.script('rtGroupLeave', LEAVE_LUA);
    this.#members = client.script('rtGroupMembers', MEMBERS_LUA);
    this.#unit = client.script('rtGroupUnit', UNIT_LUA);
    this.#take = client.script('rtGroupTake', TAKE_LUA);
  }

  get #prefix(): string {
    return this.#client.prefix;
  }

  async join(
    app: string,
    group: string,
    member: GroupMember,
    limits: GroupLimits,
  ): Promise<GroupJoin | 'full' | 'already'> {
    // Only the member's own fields, so what comes back is what was given.
    const json = JSON.stringify({
      page: member.page,
      user: member.user,
      media: member.media,
      joinedAt: member.joinedAt,
    });
    const reply = await this.#join(
      [],
      [this.#prefix, app, group, member.page, capOf(limits.max), json, capOf(limits.unitFrom)],
    );
    if (reply === 'full' || reply === 'already') return reply;
    const [unit, switched, before] = Array.isArray(reply) ? reply : [];
    return { before: membersOf(before), unit: unit === 1, switched: switched === 1 };
  }

  async leave(app: string, group: string, page: string): Promise<GroupMember | undefined> {
    return toMember(await this.#leave([], [this.#prefix, app, group, page]));
  }

  async members(app: string, group: string): Promise<GroupMember[]> {
    return membersOf(await this.#members([], [this.#prefix, app, group]));
  }

  async unit(app: string, group: string): Promise<boolean> {
    return (await this.#unit([], [this.#prefix, app, group])) === 1;
  }

  async takeNode(node: string, limit: number): Promise<LapsedMember[]> {
    if (!(limit > 0)) return [];
    const reply = await this.#take([], [this.#prefix, node, Number.isFinite(limit) ? Math.ceil(limit) : 1_000_000]);
    const taken: LapsedMember[] = [];
    if (!Array.isArray(reply)) return taken;
    for (let i = 0; i + 2 < reply.length; i += 3) {
      const member = toMember(reply[i + 2]);
      if (member) taken.push({ app: String(reply[i]), group: String(reply[i + 1]), member });
    }
    return taken;
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}
