import { nodeOfPage } from '../node-id.js';
import type {
  LapsedStreamMember,
  StreamChange,
  StreamMember,
  StreamState,
  StreamStore,
  StreamWatch,
} from '../types.js';
import { type RedisClient, type Script, toStoreError } from './client.js';
import { capOf, fromPageRecord, pageRecord } from './page-record.js';

/**
 * The stream scripts. Each works in one slot, the stream's (`{<app>:<stream>}`), on the keys it is
 * given (KEYS: m, o, s, w), so its presenter, its size, its live run and its watches are decided in
 * one place. Times pass through as the caller's strings (Lua's numbers would round them); only the
 * watch counter is counted here. A stream's keys (after the prefix):
 * - `stream:{<app>:<stream>}:m` hash of page -> the member's JSON (page, user, role); it decides
 *   who is on and how many;
 * - `stream:{<app>:<stream>}:o` list of the same pages in join order;
 * - `stream:{<app>:<stream>}:s` hash: `presenter` (page), and while live `run`, `since`, `n` (the
 *   last watch number of the run);
 * - `stream:{<app>:<stream>}:w` hash of page -> `<joinedAt>|<watch id>`: the open watches, while live.
 * A stream's keys go with its last member, and expire a week after its last change: a safety net
 * only, since every member leaves by `leave` or with its page's node.
 *
 * A change goes back as { live, ended start, ended end, joined, left } ('' for none), each watch as
 * { member JSON, watch id, joinedAt[, leftAt] }, in join order.
 */
const STREAMS_LUA = `
local M, O, S, W = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local KEEP_MS = 604800000

local function new_change() return { '', '', '', {}, {} } end

local function keep()
  for _, k in ipairs({ M, O, S, W }) do redis.call('pexpire', k, KEEP_MS) end
end

-- Opens the member's watch in the live run (none for a visitor) and reports it.
local function open_watch(page, json, now, change)
  if cjson.decode(json).user == nil then return end
  local id = redis.call('hget', S, 'run') .. '.' .. redis.call('hincrby', S, 'n', 1)
  redis.call('hset', W, page, now .. '|' .. id)
  table.insert(change[4], { json, id, now })
end

-- Closes the page's open watch, if any, and reports it.
local function close_watch(page, now, change)
  local open = redis.call('hget', W, page)
  if not open then return end
  local bar = string.find(open, '|', 1, true)
  local json = redis.call('hget', M, page)
  table.insert(change[5], { json, string.sub(open, bar + 1), string.sub(open, 1, bar - 1), now })
  redis.call('hdel', W, page)
end

-- Ends the live run: every open watch closes, in join order.
local function end_run(now, change)
  for _, page in ipairs(redis.call('lrange', O, 0, -1)) do close_watch(page, now, change) end
  change[2] = redis.call('hget', S, 'since') or ''
  change[3] = now
  redis.call('hdel', S, 'run', 'since', 'n')
  redis.call('del', W)
end
`;

// ARGV: page, max, member JSON, role, now. Answers 'already', 'taken', 'full', or
// { presenter, since, change } ('' for none).
const JOIN_LUA = `${STREAMS_LUA}
local page, now = ARGV[1], ARGV[5]
if redis.call('hexists', M, page) == 1 then return 'already' end
if ARGV[4] == 'presenter' and redis.call('hexists', S, 'presenter') == 1 then return 'taken' end
if redis.call('hlen', M) >= tonumber(ARGV[2]) then return 'full' end
redis.call('hset', M, page, ARGV[3])
redis.call('rpush', O, page)
if ARGV[4] == 'presenter' then redis.call('hset', S, 'presenter', page) end
local change = new_change()
if redis.call('hexists', S, 'run') == 1 then open_watch(page, ARGV[3], now, change) end
keep()
return { redis.call('hget', S, 'presenter') or '', redis.call('hget', S, 'since') or '', change }`;

// ARGV: page, now. Takes the page off: answers { member JSON, change } to the one caller that took
// it off, else false. The stream's keys go with its last member.
const LEAVE_LUA = `${STREAMS_LUA}
local page, now = ARGV[1], ARGV[2]
local json = redis.call('hget', M, page)
if not json then return false end
local change = new_change()
if redis.call('hget', S, 'presenter') == page then
  if redis.call('hexists', S, 'run') == 1 then end_run(now, change) end
  redis.call('hdel', S, 'presenter')
else
  close_watch(page, now, change)
end
redis.call('hdel', M, page)
redis.call('lrem', O, 1, page)
if redis.call('hlen', M) == 0 then
  redis.call('del', M, O, S, W)
else
  keep()
end
return { json, change }`;

// ARGV: page, run, now. Answers the change, or false unless the page presents a stream not live.
const GO_LIVE_LUA = `${STREAMS_LUA}
local page, now = ARGV[1], ARGV[3]
if redis.call('hget', S, 'presenter') ~= page or redis.call('hexists', S, 'run') == 1 then return false end
redis.call('hset', S, 'run', ARGV[2], 'since', now, 'n', 0)
local change = new_change()
change[1] = now
for _, p in ipairs(redis.call('lrange', O, 0, -1)) do
  local json = redis.call('hget', M, p)
  if json then open_watch(p, json, now, change) end
end
keep()
return change`;

// ARGV: page, now. Answers the change, or false unless the page presents a live stream.
const STOP_LIVE_LUA = `${STREAMS_LUA}
local page, now = ARGV[1], ARGV[2]
if redis.call('hget', S, 'presenter') ~= page or redis.call('hexists', S, 'run') == 0 then return false end
local change = new_change()
end_run(now, change)
keep()
return change`;

// Answers { presenter, since } ('' for none).
const STATE_LUA = `${STREAMS_LUA}
return { redis.call('hget', S, 'presenter') or '', redis.call('hget', S, 'since') or '' }`;

// The members' JSON in join order (the hash decides who is on).
const MEMBERS_LUA = `${STREAMS_LUA}
local out = {}
for _, page in ipairs(redis.call('lrange', O, 0, -1)) do
  local json = redis.call('hget', M, page)
  if json then out[#out + 1] = json end
end
return out`;

/**
 * `stream:n:{<node>}` (in the node's slot): a set of the node's pages on streams, each as the JSON
 * `[app, stream, page]`: where `takeNode` finds them once the node died (the node leases are
 * NodeStore's). A page is recorded there before the join script and cleared after it left, so a
 * crash in between leaves a name the sweep drops (the page is not on) or takes (it is), never a
 * member no sweep finds.
 */
const MAX_ROUNDS = 1000;

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

/** `{ member JSON, change }` (the leave script's answer) as a member and its change. */
function toLeft(reply: unknown): { member: StreamMember; change: StreamChange } | undefined {
  if (!Array.isArray(reply)) return undefined;
  const member = toMember(reply[0]);
  return member && { member, change: toChange(reply[1]) };
}

/**
 * Live streams on Redis, shared by every node: each decision is one script in the stream's slot, so
 * a stream never has two presenters nor more than `max` pages however many nodes join at once, and
 * each change (its watches opened and closed, its run started or ended) reaches one caller, by
 * `leave` or with its page's node (`takeNode`). What a node's pages hold is recorded under the
 * node's tag, in steps around them.
 */
export class RedisStreamStore implements StreamStore {
  readonly #client: RedisClient;
  readonly #join: Script;
  readonly #leave: Script;
  readonly #goLive: Script;
  readonly #stopLive: Script;
  readonly #state: Script;
  readonly #members: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#join = client.script('rtStreamJoin', JOIN_LUA);
    this.#leave = client.script('rtStreamLeave', LEAVE_LUA);
    this.#goLive = client.script('rtStreamGoLive', GO_LIVE_LUA);
    this.#stopLive = client.script('rtStreamStopLive', STOP_LIVE_LUA);
    this.#state = client.script('rtStreamState', STATE_LUA);
    this.#members = client.script('rtStreamMembers', MEMBERS_LUA);
  }

  /** The stream's keys: m, o, s, w. */
  #keys(app: string, stream: string): string[] {
    const base = this.#client.key(`stream:{${app}:${stream}}`);
    return [`${base}:m`, `${base}:o`, `${base}:s`, `${base}:w`];
  }

  #node(node: string): string {
    return this.#client.key(`stream:n:{${node}}`);
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
    const node = this.#node(nodeOfPage(member.page));
    const name = pageRecord(app, stream, member.page);
    // Recorded first, so the node's sweep finds the page whatever happens next.
    await this.#client.call((redis) => redis.sadd(node, name));
    const reply = await this.#join(this.#keys(app, stream), [
      member.page,
      capOf(max),
      json,
      member.role,
      String(nowMs),
    ]);
    if (reply === 'taken' || reply === 'full') await this.#clear(node, name);
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
    const left = toLeft(await this.#leave(this.#keys(app, stream), [page, String(nowMs)]));
    await this.#clear(this.#node(nodeOfPage(page)), pageRecord(app, stream, page));
    return left;
  }

  async goLive(
    app: string,
    stream: string,
    page: string,
    run: string,
    nowMs: number,
  ): Promise<StreamChange | undefined> {
    const reply = await this.#goLive(this.#keys(app, stream), [page, run, String(nowMs)]);
    return Array.isArray(reply) ? toChange(reply) : undefined;
  }

  async stopLive(app: string, stream: string, page: string, nowMs: number): Promise<StreamChange | undefined> {
    const reply = await this.#stopLive(this.#keys(app, stream), [page, String(nowMs)]);
    return Array.isArray(reply) ? toChange(reply) : undefined;
  }

  async state(app: string, stream: string): Promise<StreamState> {
    const reply = await this.#state(this.#keys(app, stream), []);
    const [presenter, since] = Array.isArray(reply) ? (reply as unknown[]) : [];
    return toState(presenter, since);
  }

  async members(app: string, stream: string): Promise<StreamMember[]> {
    const reply = await this.#members(this.#keys(app, stream), []);
    return Array.isArray(reply) ? reply.map(toMember).filter((m): m is StreamMember => m !== undefined) : [];
  }

  async takeNode(node: string, nowMs: number, limit: number): Promise<LapsedStreamMember[]> {
    const cap = Number.isFinite(limit) ? Math.ceil(limit) : 1_000_000;
    const set = this.#node(node);
    const taken: LapsedStreamMember[] = [];
    for (let round = 0; round < MAX_ROUNDS && taken.length < cap; round++) {
      const names = await this.#client.call((redis) => redis.srandmember(set, cap - taken.length));
      if (names.length === 0) break;
      const results = await Promise.allSettled(
        names.map(async (name): Promise<LapsedStreamMember | undefined> => {
          const [app, stream, page] = fromPageRecord(name) ?? [];
          const left =
            app === undefined || stream === undefined || page === undefined
              ? undefined
              : toLeft(await this.#leave(this.#keys(app, stream), [page, String(nowMs)]));
          // Out of the node's set either way: the page is off the stream now.
          await this.#clear(set, name);
          return left && app !== undefined && stream !== undefined ? { app, stream, ...left } : undefined;
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

  /** Takes a name out of a node's set, after the decision: a failure leaves it to the sweep. */
  async #clear(node: string, name: string): Promise<void> {
    try {
      await this.#client.call((redis) => redis.srem(node, name));
    } catch {
      // The node's sweep drops what no page of it holds.
    }
  }
}
