import type { DeliveryError, DeliveryState } from '@realtime/protocol';
import {
  type StoredBatch,
  TRY_COUNTS_KEPT_MS,
  type TryMinute,
  type TryOutcome,
  type WebhookStats,
  type WebhookStore,
} from '../types.js';
import type { RedisClient, Script } from './client.js';
import { waitingAppsKey, waitingKey } from './keys.js';

/**
 * Lua shared by the webhook scripts. ARGV[1] is always the key prefix: scripts that walk apps or
 * batches name their keys from it (the queue lives on one Redis; see keys.ts).
 *
 * Keys: `wh:{<app>}:waiting` list of event texts, oldest first (Broker.publish adds there too);
 * `wh:apps` set of apps with events waiting; `wh:b:<id>` batch hash (the StoredBatch fields, null
 * ones absent, plus seq, holder and until for the lease); `wh:seq` counter ordering batches as made;
 * `wh:{<app>}:batches` zset by seq (list); `wh:due` zset by nextAt of "<seq, 16 digits>:<id>"
 * (ties in order made); `wh:open` zset by createdAt of pending/retrying batches (stats);
 * `wh:done` zset by doneAt (prune); `wh:states` hash of batch counts by state;
 * `wh:{<app>}:tries:<minute start ms>` hash of tries by outcome, expiring a day after its last try.
 * Leases are times in the batch hash compared with the caller's `now` (not Redis key expiry): the
 * caller's clock decides, as with every other time in the queue.
 */
const WEBHOOK_LUA = `
local P = ARGV[1]
local function bkey(id) return P .. 'wh:b:' .. id end
local function member(seq, id) return string.format('%016d:%s', seq, id) end
local FIELDS = {'state', 'attempts', 'failed', 'status', 'error', 'firstTryAt', 'at', 'nextAt', 'doneAt'}

-- Stores a new batch; answers its hash.
local function new_batch(app, id, body, events, now, holder, lease_end)
  local seq = redis.call('incr', P .. 'wh:seq')
  local fields = {'id', id, 'app', app, 'body', body, 'events', events, 'state', 'pending', 'attempts', 0,
    'failed', 0, 'status', 0, 'createdAt', now, 'nextAt', now, 'seq', seq}
  if holder then
    fields[#fields + 1] = 'holder'; fields[#fields + 1] = holder
    fields[#fields + 1] = 'until'; fields[#fields + 1] = lease_end
  end
  redis.call('hset', bkey(id), unpack(fields))
  redis.call('zadd', P .. 'wh:due', now, member(seq, id))
  redis.call('zadd', P .. 'wh:open', now, id)
  redis.call('zadd', P .. 'wh:{' .. app .. '}:batches', seq, id)
  redis.call('hincrby', P .. 'wh:states', 'pending', 1)
  return redis.call('hgetall', bkey(id))
end

local function lease(id, holder, lease_end)
  redis.call('hset', bkey(id), 'holder', holder, 'until', lease_end)
end
`;

// KEYS: the app's waiting list, the set of apps waiting. ARGV: app, event text.
const ADD_EVENT_LUA = `
redis.call('rpush', KEYS[1], ARGV[2])
redis.call('sadd', KEYS[2], ARGV[1])
return 1`;

// ARGV: prefix, app, batch id, max, now. KEYS: the app's waiting list, the set of apps waiting.
const FORM_LUA = `${WEBHOOK_LUA}
local events = redis.call('lrange', KEYS[1], 0, tonumber(ARGV[4]) - 1)
if #events == 0 then return false end
redis.call('ltrim', KEYS[1], #events, -1)
if redis.call('llen', KEYS[1]) == 0 then redis.call('srem', KEYS[2], ARGV[2]) end
return new_batch(ARGV[2], ARGV[3], '{"events":[' .. table.concat(events, ',') .. ']}', #events, ARGV[5])`;

// ARGV: prefix, app, batch id, now, holder, until, events...
const ADD_LUA = `${WEBHOOK_LUA}
local events = {}
for n = 7, #ARGV do events[#events + 1] = ARGV[n] end
return new_batch(ARGV[2], ARGV[3], '{"events":[' .. table.concat(events, ',') .. ']}', #events, ARGV[4], ARGV[5], ARGV[6])`;

// ARGV: prefix, now, limit, holder, until. Oldest due first; leased ones are passed over.
const CLAIM_DUE_LUA = `${WEBHOOK_LUA}
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out, offset = {}, 0
while #out < limit do
  local due = redis.call('zrangebyscore', P .. 'wh:due', '-inf', now, 'LIMIT', offset, 100)
  if #due == 0 then break end
  offset = offset + #due
  for _, m in ipairs(due) do
    local id = string.match(m, '^%d+:(.*)$')
    local lease_end = redis.call('hget', bkey(id), 'until')
    if not lease_end or tonumber(lease_end) <= now then
      out[#out + 1] = redis.call('hgetall', bkey(id))
      lease(id, ARGV[4], ARGV[5])
      if #out >= limit then break end
    end
  end
end
return out`;

// ARGV: prefix, id, now, holder, until. Answers the batch, 'busy', or nil.
const CLAIM_LUA = `${WEBHOOK_LUA}
local batch = redis.call('hgetall', bkey(ARGV[2]))
if #batch == 0 then return false end
local lease_end = redis.call('hget', bkey(ARGV[2]), 'until')
if lease_end and tonumber(lease_end) > tonumber(ARGV[3]) then return 'busy' end
lease(ARGV[2], ARGV[4], ARGV[5])
return batch`;

// ARGV: prefix, id, holder, then the values of FIELDS ('' for null), then the try to count: app,
// minute start, outcome, keep ms ('' outcome: none). Only the holder records a try; a try of a
// batch still stored is counted whoever held it, since it reached the receiver.
const SAVE_LUA = `${WEBHOOK_LUA}
-- A batch removed with its app meanwhile is counted no more.
if ARGV[15] ~= '' and redis.call('exists', bkey(ARGV[2])) == 1 then
  local tries = P .. 'wh:{' .. ARGV[13] .. '}:tries:' .. ARGV[14]
  redis.call('hincrby', tries, ARGV[15], 1)
  redis.call('pexpire', tries, ARGV[16])
end
local key = bkey(ARGV[2])
if redis.call('hget', key, 'holder') ~= ARGV[3] then return 0 end
local old = redis.call('hmget', key, 'state', 'seq', 'createdAt', 'id')
local set, unset = {}, {'holder', 'until'}
for n, name in ipairs(FIELDS) do
  local value = ARGV[3 + n]
  if value == '' then unset[#unset + 1] = name else set[#set + 1] = name; set[#set + 1] = value end
end
redis.call('hset', key, unpack(set))
redis.call('hdel', key, unpack(unset))
local state, next_at, done_at = ARGV[4], ARGV[11], ARGV[12]
local m = member(tonumber(old[2]), old[4])
if next_at == '' then redis.call('zrem', P .. 'wh:due', m) else redis.call('zadd', P .. 'wh:due', next_at, m) end
if state == 'pending' or state == 'retrying' then
  redis.call('zadd', P .. 'wh:open', old[3], old[4])
else
  redis.call('zrem', P .. 'wh:open', old[4])
end
if done_at == '' then redis.call('zrem', P .. 'wh:done', old[4]) else redis.call('zadd', P .. 'wh:done', done_at, old[4]) end
if old[1] ~= state then
  redis.call('hincrby', P .. 'wh:states', old[1], -1)
  redis.call('hincrby', P .. 'wh:states', state, 1)
end
return 1`;

// ARGV: prefix, list key, limit. Newest first.
const LIST_LUA = `${WEBHOOK_LUA}
local out = {}
for _, id in ipairs(redis.call('zrevrange', ARGV[2], 0, tonumber(ARGV[3]) - 1)) do
  out[#out + 1] = redis.call('hgetall', bkey(id))
end
return out`;

// ARGV: prefix, app, first minute start, last minute start. Answers {minute, outcome, n, ...}.
const TRIES_LUA = `${WEBHOOK_LUA}
local out = {}
for minute = tonumber(ARGV[3]), tonumber(ARGV[4]), 60000 do
  local counts = redis.call('hgetall', P .. 'wh:{' .. ARGV[2] .. '}:tries:' .. string.format('%d', minute))
  for n = 1, #counts, 2 do
    out[#out + 1] = string.format('%d', minute); out[#out + 1] = counts[n]; out[#out + 1] = counts[n + 1]
  end
end
return out`;

// ARGV: prefix, before. Removes batches done before it; answers how many.
const PRUNE_LUA = `${WEBHOOK_LUA}
local gone = redis.call('zrangebyscore', P .. 'wh:done', '-inf', '(' .. ARGV[2])
for _, id in ipairs(gone) do
  local b = redis.call('hmget', bkey(id), 'app', 'state', 'seq')
  if b[1] then
    redis.call('zrem', P .. 'wh:{' .. b[1] .. '}:batches', id)
    redis.call('zrem', P .. 'wh:due', member(tonumber(b[3]), id))
    redis.call('zrem', P .. 'wh:open', id)
    redis.call('hincrby', P .. 'wh:states', b[2], -1)
    redis.call('del', bkey(id))
  end
  redis.call('zrem', P .. 'wh:done', id)
end
return #gone`;

// ARGV: prefix, app, max. Removes up to max of the app's batches (from every index) and answers how
// many went; once none is left, also its waiting events. Called until it answers 0, so no one call
// holds Redis long however many batches the app has.
const REMOVE_APP_LUA = `${WEBHOOK_LUA}
local app = ARGV[2]
local list = P .. 'wh:{' .. app .. '}:batches'
local ids = redis.call('zrange', list, 0, tonumber(ARGV[3]) - 1)
for _, id in ipairs(ids) do
  local b = redis.call('hmget', bkey(id), 'state', 'seq')
  if b[1] then
    redis.call('zrem', P .. 'wh:due', member(tonumber(b[2]), id))
    redis.call('zrem', P .. 'wh:open', id)
    redis.call('zrem', P .. 'wh:done', id)
    redis.call('hincrby', P .. 'wh:states', b[1], -1)
    redis.call('del', bkey(id))
  end
  redis.call('zrem', list, id)
end
if #ids == 0 then
  redis.call('del', P .. 'wh:{' .. app .. '}:waiting')
  redis.call('srem', P .. 'wh:apps', app)
end
return #ids`;

// ARGV: prefix, app, first minute start, last minute start. Drops the app's tries counted per minute.
const REMOVE_TRIES_LUA = `${WEBHOOK_LUA}
for minute = tonumber(ARGV[3]), tonumber(ARGV[4]), 60000 do
  redis.call('del', P .. 'wh:{' .. ARGV[2] .. '}:tries:' .. string.format('%d', minute))
end
return 1`;

// ARGV: prefix. Answers {waiting, oldest event at or '', oldest open batch createdAt or '', state, count, ...}.
const STATS_LUA = `${WEBHOOK_LUA}
local waiting, oldest = 0, nil
for _, app in ipairs(redis.call('smembers', P .. 'wh:apps')) do
  local key = P .. 'wh:{' .. app .. '}:waiting'
  waiting = waiting + redis.call('llen', key)
  local first = redis.call('lindex', key, 0)
  if first then
    -- Event texts start {"id":"...","at":<ms>; anything else is read in full.
    local at = tonumber(string.match(first, '^{"id":"[^"]*","at":(%d+)'))
    if not at then
      local ok, decoded = pcall(cjson.decode, first)
      if ok and type(decoded) == 'table' then at = tonumber(decoded.at) end
    end
    if at and (not oldest or at < oldest) then oldest = at end
  end
end
local open = redis.call('zrange', P .. 'wh:open', 0, 0, 'WITHSCORES')
local out = {waiting, oldest and string.format('%d', oldest) or '', open[2] or ''}
local states = redis.call('hgetall', P .. 'wh:states')
for n = 1, #states, 2 do
  if tonumber(states[n + 1]) > 0 then out[#out + 1] = states[n]; out[#out + 1] = states[n + 1] end
end
return out`;

function toBatch(reply: unknown): StoredBatch | undefined {
  if (!Array.isArray(reply) || reply.length === 0) return undefined;
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < reply.length; i += 2) f.set(String(reply[i]), String(reply[i + 1]));
  const num = (name: string): number => Number(f.get(name) ?? 0);
  const orNull = (name: string): number | null => (f.has(name) ? Number(f.get(name)) : null);
  return {
    id: f.get('id') ?? '',
    app: f.get('app') ?? '',
    body: f.get('body') ?? '',
    events: num('events'),
    state: (f.get('state') ?? 'pending') as DeliveryState,
    attempts: num('attempts'),
    failed: num('failed'),
    status: num('status'),
    error: (f.get('error') ?? null) as DeliveryError | null,
    createdAt: num('createdAt'),
    firstTryAt: orNull('firstTryAt'),
    at: orNull('at'),
    nextAt: orNull('nextAt'),
    doneAt: orNull('doneAt'),
  };
}

function toBatches(reply: unknown): StoredBatch[] {
  if (!Array.isArray(reply)) return [];
  return reply.map(toBatch).filter((b): b is StoredBatch => b !== undefined);
}

const MINUTE_MS = 60_000;
/** Batches one removal script drops before letting other scripts run. */
const REMOVE_CHUNK = 500;

const text = (value: number | string | null): string => (value === null ? '' : String(value));

/**
 * The webhook queue in Redis, shared by every node: each step that reads then writes is one script,
 * so an event goes into one batch and a lease to one holder however many nodes ask at once.
 */
export class RedisWebhookStore implements WebhookStore {
  readonly #client: RedisClient;
  readonly #addEvent: Script;
  readonly #form: Script;
  readonly #add: Script;
  readonly #claimDue: Script;
  readonly #claim: Script;
  readonly #save: Script;
  readonly #tries: Script;
  readonly #list: Script;
  readonly #prune: Script;
  readonly #stats: Script;
  readonly #removeApp: Script;
  readonly #removeTries: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#addEvent = client.script('rtWebhookAddEvent', ADD_EVENT_LUA);
    this.#form = client.script('rtWebhookForm', FORM_LUA);
    this.#add = client.script('rtWebhookAdd', ADD_LUA);
    this.#claimDue = client.script('rtWebhookClaimDue', CLAIM_DUE_LUA);
    this.#claim = client.script('rtWebhookClaim', CLAIM_LUA);
    this.#save = client.script('rtWebhookSave', SAVE_LUA);
    this.#tries = client.script('rtWebhookTries', TRIES_LUA);
    this.#list = client.script('rtWebhookList', LIST_LUA);
    this.#prune = client.script('rtWebhookPrune', PRUNE_LUA);
    this.#stats = client.script('rtWebhookStats', STATS_LUA);
    this.#removeApp = client.script('rtWebhookRemoveApp', REMOVE_APP_LUA);
    this.#removeTries = client.script('rtWebhookRemoveTries', REMOVE_TRIES_LUA);
  }

  get #prefix(): string {
    return this.#client.prefix;
  }

  async addEvent(app: string, json: string): Promise<void> {
    const prefix = this.#prefix;
    await this.#addEvent([waitingKey(prefix, app), waitingAppsKey(prefix)], [app, json]);
  }

  async waiting(): Promise<Map<string, number>> {
    const prefix = this.#prefix;
    const apps = await this.#client.call((redis) => redis.smembers(waitingAppsKey(prefix)));
    const counts = await Promise.all(
      apps.map((app) => this.#client.call((redis) => redis.llen(waitingKey(prefix, app)))),
    );
    const out = new Map<string, number>();
    for (const [i, app] of apps.entries()) if ((counts[i] ?? 0) > 0) out.set(app, counts[i] ?? 0);
    return out;
  }

  async formBatch(app: string, batchId: string, max: number, now: number): Promise<StoredBatch | undefined> {
    const prefix = this.#prefix;
    return toBatch(
      await this.#form([waitingKey(prefix, app), waitingAppsKey(prefix)], [prefix, app, batchId, max, now]),
    );
  }

  async addBatch(
    app: string,
    batchId: string,
    events: string[],
    now: number,
    lease: { holder: string; ms: number },
  ): Promise<StoredBatch> {
    const batch = toBatch(
      await this.#add([], [this.#prefix, app, batchId, now, lease.holder, now + lease.ms, ...events]),
    );
    if (!batch) throw new Error('the batch script answered no batch');
    return batch;
  }

  async claimDue(now: number, limit: number, lease: { holder: string; ms: number }): Promise<StoredBatch[]> {
    return toBatches(await this.#claimDue([], [this.#prefix, now, limit, lease.holder, now + lease.ms]));
  }

  async claim(
    id: string,
    now: number,
    lease: { holder: string; ms: number },
  ): Promise<StoredBatch | 'busy' | undefined> {
    const reply = await this.#claim([], [this.#prefix, id, now, lease.holder, now + lease.ms]);
    return reply === 'busy' ? 'busy' : toBatch(reply);
  }

  async get(id: string): Promise<StoredBatch | undefined> {
    return toBatch(await this.#client.call((redis) => redis.hgetall(`${this.#prefix}wh:b:${id}`).then(flatten)));
  }

  async list(app: string, limit: number): Promise<StoredBatch[]> {
    if (limit <= 0) return [];
    return toBatches(await this.#list([], [this.#prefix, `${this.#prefix}wh:{${app}}:batches`, limit]));
  }

  async saveTry(batch: StoredBatch, holder: string, tried?: TryOutcome): Promise<void> {
    const minute = Math.floor((batch.at ?? 0) / MINUTE_MS) * MINUTE_MS;
    await this.#save(
      [],
      [
        this.#prefix,
        batch.id,
        holder,
        batch.state,
        batch.attempts,
        batch.failed,
        batch.status,
        text(batch.error),
        text(batch.firstTryAt),
        text(batch.at),
        text(batch.nextAt),
        text(batch.doneAt),
        batch.app,
        minute,
        tried ?? '',
        // A day after this try, and the rest of its minute: a reader counts minutes back from now.
        TRY_COUNTS_KEPT_MS + MINUTE_MS,
      ],
    );
  }

  async tryCounts(app: string, sinceMs: number, nowMs: number): Promise<TryMinute[]> {
    const from = Math.max(Math.floor(sinceMs / MINUTE_MS), Math.floor((nowMs - TRY_COUNTS_KEPT_MS) / MINUTE_MS) + 1);
    const to = Math.floor(nowMs / MINUTE_MS);
    if (to < from) return [];
    const reply = await this.#tries([], [this.#prefix, app, from * MINUTE_MS, to * MINUTE_MS]);
    const parts = Array.isArray(reply) ? reply.map(String) : [];
    const minutes: TryMinute[] = [];
    for (let i = 0; i + 2 < parts.length; i += 3) {
      const at = Number(parts[i]);
      let last = minutes.at(-1);
      if (last?.at !== at) {
        last = { at, outcomes: {} };
        minutes.push(last);
      }
      last.outcomes[parts[i + 1] as TryOutcome] = Number(parts[i + 2]);
    }
    return minutes;
  }

  async prune(before: number): Promise<number> {
    return Number(await this.#prune([], [this.#prefix, before]));
  }

  async stats(now: number): Promise<WebhookStats> {
    const reply = await this.#stats([], [this.#prefix]);
    const parts = Array.isArray(reply) ? reply.map(String) : [];
    const starts = [parts[1], parts[2]].filter((at): at is string => at !== undefined && at !== '').map(Number);
    const batches: WebhookStats['batches'] = {};
    for (let i = 3; i + 1 < parts.length; i += 2) batches[parts[i] as DeliveryState] = Number(parts[i + 1]);
    return {
      waiting: Number(parts[0] ?? 0),
      oldestWaitingMs: starts.length === 0 ? 0 : Math.max(0, now - Math.min(...starts)),
      batches,
    };
  }

  /**
   * Through the app's own indexes, never a SCAN: its batch list, its waiting list, and its tries by
   * the minutes a count can be kept (a day back from `nowMs`, and the minute ahead a clock may be).
   */
  async removeApp(app: string, nowMs: number): Promise<void> {
    // A chunk a call: other scripts run in between.
    let gone: number;
    do gone = Number(await this.#removeApp([], [this.#prefix, app, REMOVE_CHUNK]));
    while (gone > 0);
    const last = (Math.floor(nowMs / MINUTE_MS) + 1) * MINUTE_MS;
    await this.#removeTries([], [this.#prefix, app, last - TRY_COUNTS_KEPT_MS - 2 * MINUTE_MS, last]);
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}

/** HGETALL's record as the flat list the scripts answer. */
function flatten(record: Record<string, string>): string[] {
  return Object.entries(record).flat();
}
