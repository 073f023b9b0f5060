import type { CallRecord, CallStore } from '../types.js';
import type { RedisClient, Script } from './client.js';

/**
 * Lua shared by the call scripts. ARGV[1] is always the key prefix: the sweep names keys from what it
 * finds, so every call key is named here and nowhere else. Like presence, calls live on one Redis;
 * hash tags still keep each app's keys together.
 *
 * Keys (after the prefix):
 * - `call:{<app>}:c:<id>` hash of the CallRecord's fields (numbers as their shortest decimal text,
 *   `media` as JSON; `toPage` and `answeredAt` absent while it rings);
 * - `call:{<app>}:u:<user>` the id of the call the user is in; one whose call hash is gone counts
 *   as free, so the user index can never keep anyone busy longer than the call;
 * - `call:ring` zset of ringing calls (`<app>:<id>`; app keys hold no ':') by ringUntil;
 * - `call:n:{<node>}` set of the calls (`<app>:<id>`) with a page on the node: what `takeNode` takes
 *   once the node died (the node leases are NodeStore's).
 * A call's keys expire a day after its ring ends, or a week after it was answered: a safety net only,
 * since every call leaves by `end`, by ringing out, or with its page's node.
 * A page's node is its id up to the first '.' (`<node>.<n>`; an id without one is its own node).
 */
const CALLS_LUA = `
local P = ARGV[1]
local RING = P .. 'call:ring'
local RING_KEEP_MS, ANSWERED_KEEP_MS = 86400000, 604800000
local function ckey(app, id) return P .. 'call:{' .. app .. '}:c:' .. id end
local function ukey(app, user) return P .. 'call:{' .. app .. '}:u:' .. user end
local function nkey(node) return P .. 'call:n:{' .. node .. '}' end
local function node_of(page)
  local dot = string.find(page, '.', 1, true)
  if dot then return string.sub(page, 1, dot - 1) end
  return page
end

-- The flat HGETALL reply as a table; nil when the call is gone.
local function load(app, id)
  local flat = redis.call('hgetall', ckey(app, id))
  if #flat == 0 then return nil, flat end
  local call = {}
  for i = 1, #flat, 2 do call[flat[i]] = flat[i + 1] end
  return call, flat
end

-- The call the user is in, if its hash is still there.
local function call_of(app, user)
  local id = redis.call('get', ukey(app, user))
  if not id then return nil end
  if redis.call('exists', ckey(app, id)) == 0 then return nil end
  return id
end

-- Counts the call among those of the page's node, so it ends with the node.
local function hold(page, m)
  redis.call('sadd', nkey(node_of(page)), m)
end

local function remove(app, id, call)
  redis.call('del', ckey(app, id))
  for _, user in ipairs({call['from'], call['to']}) do
    local k = ukey(app, user)
    if redis.call('get', k) == id then redis.call('del', k) end
  end
  local m = app .. ':' .. id
  redis.call('zrem', RING, m)
  redis.call('srem', nkey(node_of(call['fromPage'])), m)
  if call['toPage'] then redis.call('srem', nkey(node_of(call['toPage'])), m) end
end

local function split(m)
  local colon = string.find(m, ':', 1, true)
  return string.sub(m, 1, colon - 1), string.sub(m, colon + 1)
end
`;

// ARGV: prefix, app, id, from, to, fromPage, keep ms, then field, value pairs. Answers the outcome.
const PLACE_LUA = `${CALLS_LUA}
local app, id, from, to = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if call_of(app, from) then return 'in_call' end
if call_of(app, to) then return 'busy' end
local c = ckey(app, id)
redis.call('del', c)
redis.call('hset', c, unpack(ARGV, 8))
local keep = RING_KEEP_MS + math.max(0, tonumber(ARGV[7]))
local m = app .. ':' .. id
for _, k in ipairs({c, ukey(app, from), ukey(app, to)}) do
  if k ~= c then redis.call('set', k, id) end
  redis.call('pexpire', k, keep)
end
redis.call('zadd', RING, redis.call('hget', c, 'ringUntil'), m)
hold(ARGV[6], m)
return 'placed'`;

// ARGV: prefix, app, id, page, now. Answers the record, or false when it no longer rings.
const ANSWER_LUA = `${CALLS_LUA}
local app, id, page = ARGV[2], ARGV[3], ARGV[4]
local call = load(app, id)
if not call or call['toPage'] then return false end
local c = ckey(app, id)
redis.call('hset', c, 'toPage', page, 'answeredAt', ARGV[5])
local m = app .. ':' .. id
redis.call('zrem', RING, m)
hold(page, m)
for _, k in ipairs({c, ukey(app, call['from']), ukey(app, call['to'])}) do
  if k == c or redis.call('get', k) == id then redis.call('pexpire', k, ANSWERED_KEEP_MS) end
end
return redis.call('hgetall', c)`;

// ARGV: prefix, app, id. Answers the record to the one caller that removed it, else false.
const END_LUA = `${CALLS_LUA}
local app, id = ARGV[2], ARGV[3]
local call, flat = load(app, id)
if not call then return false end
remove(app, id, call)
return flat`;

// ARGV: prefix, app, user. The record of the call the user is in, else false.
const CALL_OF_LUA = `${CALLS_LUA}
local app = ARGV[2]
local id = call_of(app, ARGV[3])
if not id then return false end
return redis.call('hgetall', ckey(app, id))`;

// ARGV: prefix, now, limit. Answers the records (flat) of calls still ringing past their time.
// Removes each call it answers, so each reaches one caller.
const MISSED_LUA = `${CALLS_LUA}
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
while #out < limit do
  local due = redis.call('zrangebyscore', RING, '-inf', now, 'LIMIT', 0, limit - #out)
  if #due == 0 then break end
  for _, m in ipairs(due) do
    -- Out of the ring either way: an answered call or a gone hash never rings again.
    redis.call('zrem', RING, m)
    local app, id = split(m)
    local call, flat = load(app, id)
    if call and not call['toPage'] and tonumber(call['ringUntil']) <= now then
      remove(app, id, call)
      out[#out + 1] = flat
    end
  end
end
return out`;

// ARGV: prefix, node, limit. Answers the records (flat) of calls with a page on the (dead) node.
// Removes each call it answers, so each reaches one caller.
const NODE_LUA = `${CALLS_LUA}
local n, limit = nkey(ARGV[2]), tonumber(ARGV[3])
local out = {}
while #out < limit do
  local found = redis.call('srandmember', n, limit - #out)
  if #found == 0 then break end
  for _, m in ipairs(found) do
    -- A member whose call is gone (expired) goes too; a taken call left every set already.
    redis.call('srem', n, m)
    local app, id = split(m)
    local call, flat = load(app, id)
    if call then
      remove(app, id, call)
      out[#out + 1] = flat
    end
  end
end
return out`;

const strings = (reply: unknown): string[] => (Array.isArray(reply) ? reply.map((item) => String(item ?? '')) : []);

/** HGETALL's flat reply (from a script) as an object. */
function fieldsOfReply(reply: unknown): Record<string, string> {
  const flat = strings(reply);
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] ?? ''] = flat[i + 1] ?? '';
  return fields;
}

/** A record from its hash; undefined when the call is gone (no hash). */
function toRecord(fields: Record<string, string>): CallRecord | undefined {
  if (fields.id === undefined) return undefined;
  let media: CallRecord['media'] = [];
  try {
    const parsed = JSON.parse(fields.media ?? '[]') as unknown;
    if (Array.isArray(parsed)) media = parsed.filter((m): m is 'audio' | 'video' => m === 'audio' || m === 'video');
  } catch {
    // Written from JSON.stringify by place: unreadable only if something else wrote it.
  }
  const call: CallRecord = {
    app: fields.app ?? '',
    id: fields.id,
    name: fields.name ?? '',
    from: fields.from ?? '',
    to: fields.to ?? '',
    media,
    fromPage: fields.fromPage ?? '',
    startedAt: Number(fields.startedAt),
    ringUntil: Number(fields.ringUntil),
  };
  if (fields.toPage !== undefined) call.toPage = fields.toPage;
  if (fields.answeredAt !== undefined) call.answeredAt = Number(fields.answeredAt);
  return call;
}

/** The records of a reply of flat HGETALL replies. */
function recordsOf(reply: unknown): CallRecord[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((flat) => toRecord(fieldsOfReply(flat))).filter((call): call is CallRecord => call !== undefined);
}

/** The hash fields of a record, as place stores them. */
function fieldsOf(call: CallRecord): (string | number)[] {
  const fields: (string | number)[] = [
    'app',
    call.app,
    'id',
    call.id,
    'name',
    call.name,
    'from',
    call.from,
    'to',
    call.to,
    'media',
    JSON.stringify(call.media),
    'fromPage',
    call.fromPage,
    'startedAt',
    call.startedAt,
    'ringUntil',
    call.ringUntil,
  ];
  if (call.toPage !== undefined) fields.push('toPage', call.toPage);
  if (call.answeredAt !== undefined) fields.push('answeredAt', call.answeredAt);
  return fields;
}

/**
 * Calls on Redis, shared by every node: each change is one script, so a user is in one call however
 * many nodes place at once, and a call that ends (by `end`, ringing out, or with its page's node)
 * reaches one caller.
 */
export class RedisCallStore implements CallStore {
  readonly #client: RedisClient;
  readonly #place: Script;
  readonly #answer: Script;
  readonly #end: Script;
  readonly #callOf: Script;
  readonly #missed: Script;
  readonly #node: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#place = client.script('rtCallPlace', PLACE_LUA);
    this.#answer = client.script('rtCallAnswer', ANSWER_LUA);
    this.#end = client.script('rtCallEnd', END_LUA);
    this.#callOf = client.script('rtCallOf', CALL_OF_LUA);
    this.#missed = client.script('rtCallMissed', MISSED_LUA);
    this.#node = client.script('rtCallNode', NODE_LUA);
  }

  get #prefix(): string {
    return this.#client.prefix;
  }

  async place(call: CallRecord): Promise<'placed' | 'busy' | 'in_call'> {
    const ringMs = Math.ceil(Math.max(0, call.ringUntil - call.startedAt));
    const outcome = await this.#place(
      [],
      [this.#prefix, call.app, call.id, call.from, call.to, call.fromPage, ringMs, ...fieldsOf(call)],
    );
    return outcome === 'busy' || outcome === 'in_call' ? outcome : 'placed';
  }

  async answer(app: string, id: string, page: string, nowMs: number): Promise<CallRecord | undefined> {
    return toRecord(fieldsOfReply(await this.#answer([], [this.#prefix, app, id, page, nowMs])));
  }

  async end(app: string, id: string): Promise<CallRecord | undefined> {
    return toRecord(fieldsOfReply(await this.#end([], [this.#prefix, app, id])));
  }

  async get(app: string, id: string): Promise<CallRecord | undefined> {
    const key = this.#client.key(`call:{${app}}:c:${id}`);
    return toRecord(await this.#client.call((redis) => redis.hgetall(key)));
  }

  async callOf(app: string, user: string): Promise<CallRecord | undefined> {
    return toRecord(fieldsOfReply(await this.#callOf([], [this.#prefix, app, user])));
  }

  async takeMissed(nowMs: number, limit: number): Promise<CallRecord[]> {
    if (limit < 1) return [];
    return recordsOf(await this.#missed([], [this.#prefix, nowMs, Math.floor(limit)]));
  }

  async takeNode(node: string, limit: number): Promise<CallRecord[]> {
    if (limit < 1) return [];
    return recordsOf(await this.#node([], [this.#prefix, node, Math.floor(limit)]));
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}
