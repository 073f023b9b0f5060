import { nodeOfPage } from '../node-id.js';
import type { GroupJoin, GroupLimits, GroupMember, GroupStore, LapsedMember } from '../types.js';
import { type RedisClient, type Script, toStoreError } from './client.js';
import { capOf, fromPageRecord, pageRecord } from './page-record.js';

/**
 * The group scripts. Each works in one slot, the group's (`{<app>:<group>}`), on the keys it is
 * given (KEYS: m, o, u), so who is in, how many and the switch to unit mode are decided in one place.
 * A group's keys (after the prefix):
 * - `group:{<app>:<group>}:m` hash of page -> the member's JSON (page, user, media, joinedAt);
 *   it decides who is in and how many;
 * - `group:{<app>:<group>}:o` list of the same pages in join order;
 * - `group:{<app>:<group>}:u` '1' while the group is in unit mode: set by the join that brought it
 *   to `unitFrom` pages, gone with its last member (so the next group of that name starts in mesh).
 * A group's keys go with its last member, and expire a week after its last join or leave: a
 * safety net only, since every member leaves by `leave` or with its page's node.
 */
const GROUPS_LUA = `
local M, O, U = KEYS[1], KEYS[2], KEYS[3]
local KEEP_MS = 604800000

-- The members' JSON in join order (the hash decides who is in; one HGET each: groups are small).
local function in_order()
  local out = {}
  for _, page in ipairs(redis.call('lrange', O, 0, -1)) do
    local json = redis.call('hget', M, page)
    if json then out[#out + 1] = json end
  end
  return out
end
`;

// ARGV: page, max, member JSON, unitFrom. Answers 'already', 'full', or {unit, switched, before}:
// 1 or 0 each, and the JSON of the members before, in join order (a table, so an empty group
// answers an empty array).
const JOIN_LUA = `${GROUPS_LUA}
local page = ARGV[1]
if redis.call('hexists', M, page) == 1 then return 'already' end
local count = redis.call('hlen', M)
if count >= tonumber(ARGV[2]) then return 'full' end
-- A group with no member is a new one: no mode left from one whose keys expired apart.
if count == 0 then redis.call('del', U) end
local before = in_order()
redis.call('hset', M, page, ARGV[3])
redis.call('rpush', O, page)
-- At or past the threshold, so a group whose threshold was lowered (another node's settings)
-- switches at its next join; once, since the key stays until the group is empty.
local switched = 0
if redis.call('exists', U) == 0 and count + 1 >= tonumber(ARGV[4]) then
  redis.call('set', U, '1')
  switched = 1
end
local unit = redis.call('exists', U)
for _, k in ipairs({M, O, U}) do redis.call('pexpire', k, KEEP_MS) end
return {unit, switched, before}`;

// ARGV: page. Answers the member's JSON to the one caller that took it out, else false; the
// group's keys go with its last member.
const LEAVE_LUA = `${GROUPS_LUA}
local page = ARGV[1]
local json = redis.call('hget', M, page)
if not json then return false end
redis.call('hdel', M, page)
redis.call('lrem', O, 1, page)
if redis.call('hlen', M) == 0 then
  redis.call('del', M, O, U)
else
  for _, k in ipairs({M, O, U}) do redis.call('pexpire', k, KEEP_MS) end
end
return json`;

// The members' JSON in join order.
const MEMBERS_LUA = `${GROUPS_LUA}
return in_order()`;

/**
 * `group:n:{<node>}` (in the node's slot): a set of the node's pages in groups, each as the JSON
 * `[app, group, page]`: where `takeNode` finds them once the node died (the node leases are
 * NodeStore's). A page is recorded there before the join script and cleared after it left, so a
 * crash in between leaves a name the sweep drops (the page is not in) or takes (it is), never a
 * member no sweep finds.
 */
const MAX_ROUNDS = 1000;

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

/**
 * Group calls on Redis, shared by every node: each decision is one script in the group's slot, so a
 * group never holds more than `max` pages however many nodes join at once, exactly one join switches
 * it to unit mode, and a member that leaves (by `leave` or with its page's node, `takeNode`) reaches
 * one caller. What a node's pages hold is recorded under the node's tag, in steps around them.
 */
export class RedisGroupStore implements GroupStore {
  readonly #client: RedisClient;
  readonly #join: Script;
  readonly #leave: Script;
  readonly #members: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#join = client.script('rtGroupJoin', JOIN_LUA);
    this.#leave = client.script('rtGroupLeave', LEAVE_LUA);
    this.#members = client.script('rtGroupMembers', MEMBERS_LUA);
  }

  /** The group's keys: m, o, u. */
  #keys(app: string, group: string): string[] {
    const base = this.#client.key(`group:{${app}:${group}}`);
    return [`${base}:m`, `${base}:o`, `${base}:u`];
  }

  #node(node: string): string {
    return this.#client.key(`group:n:{${node}}`);
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
    const node = this.#node(nodeOfPage(member.page));
    const name = pageRecord(app, group, member.page);
    // Recorded first, so the node's sweep finds the page whatever happens next.
    await this.#client.call((redis) => redis.sadd(node, name));
    const reply = await this.#join(this.#keys(app, group), [
      member.page,
      capOf(limits.max),
      json,
      capOf(limits.unitFrom),
    ]);
    if (reply === 'full') await this.#clear(node, [name]);
    if (reply === 'full' || reply === 'already') return reply;
    const [unit, switched, before] = Array.isArray(reply) ? reply : [];
    return { before: membersOf(before), unit: unit === 1, switched: switched === 1 };
  }

  async leave(app: string, group: string, page: string): Promise<GroupMember | undefined> {
    const member = toMember(await this.#leave(this.#keys(app, group), [page]));
    await this.#clear(this.#node(nodeOfPage(page)), [pageRecord(app, group, page)]);
    return member;
  }

  async members(app: string, group: string): Promise<GroupMember[]> {
    return membersOf(await this.#members(this.#keys(app, group), []));
  }

  async unit(app: string, group: string): Promise<boolean> {
    const [, , u] = this.#keys(app, group);
    return (await this.#client.call((redis) => redis.exists(u ?? ''))) === 1;
  }

  async takeNode(node: string, limit: number): Promise<LapsedMember[]> {
    const cap = Number.isFinite(limit) ? Math.ceil(limit) : 1_000_000;
    const set = this.#node(node);
    const taken: LapsedMember[] = [];
    for (let round = 0; round < MAX_ROUNDS && taken.length < cap; round++) {
      const names = await this.#client.call((redis) => redis.srandmember(set, cap - taken.length));
      if (names.length === 0) break;
      const results = await Promise.allSettled(
        names.map(async (name): Promise<LapsedMember | undefined> => {
          const [app, group, page] = fromPageRecord(name) ?? [];
          const member =
            app === undefined || group === undefined || page === undefined
              ? undefined
              : toMember(await this.#leave(this.#keys(app, group), [page]));
          // Out of the node's set either way: the page is out of the group now.
          await this.#clear(set, [name]);
          return member && app !== undefined && group !== undefined ? { app, group, member } : undefined;
        }),
      );
      for (const result of results) if (result.status === 'fulfilled' && result.value) taken.push(result.value);
      const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
      // Some failed: answer what was taken, so each is reported; the rest stay for a later sweep.
      if (failed && taken.length === 0) throw toStoreError(failed.reason);
      if (failed) break;
    }
    return taken;
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }

  /** Takes names out of a node's set, after the decision: a failure leaves them to the sweep. */
  async #clear(node: string, names: string[]): Promise<void> {
    try {
      await this.#client.call((redis) => redis.srem(node, ...names));
    } catch {
      // The node's sweep drops what no page of it holds.
    }
  }
}
