import type { DeliveryError, DeliveryState } from '@realtime/protocol';
import {
  type StoredBatch,
  TRY_COUNTS_KEPT_MS,
  type TryMinute,
  type TryOutcome,
  type WebhookStats,
  type WebhookStore,
} from '../types.js';
import { type RedisClient, type Script, toStoreError } from './client.js';
import {
  appReportsPattern,
  batchKey,
  claimsKeyOf,
  listOfClaims,
  REPORT_INDEX_KEYS,
  reportAppsKey,
  reportClaimsPattern,
  reportIndexOf,
  reportKey,
  reportListPattern,
  reportRoomsKey,
  waitingKey,
} from './keys.js';
import { ReportIndex } from './report-index.js';

/**
 * Lua shared by the batch scripts. ARGV[1] is always the key prefix, KEYS[1] the tag every batch
 * key shares (`wh:{wh}`: batches are formed about once a second per app, so one slot holds them all
 * and the scripts name the keys of that slot from the prefix; see keys.ts).
 *
 * Keys: `wh:{wh}:b:<id>` batch hash (the StoredBatch fields, null ones absent, plus seq, holder and
 * until for the lease); `wh:{wh}:seq` counter ordering batches as made; `wh:{wh}:batches:<app>` zset
 * by seq (list); `wh:{wh}:due` zset by nextAt of "<seq, 16 digits>:<id>" (ties in order made);
 * `wh:{wh}:open` zset by createdAt of pending/retrying batches (stats); `wh:{wh}:done` zset by doneAt
 * (prune); `wh:{wh}:states` hash of batch counts by state; `wh:{wh}:tries:<app>:<minute start ms>`
 * hash of tries by outcome, expiring a day after its last try.
 * Events waiting for a batch are elsewhere, each list in its own slot (see SOURCES below).
 * Leases are times in the batch hash compared with the caller's `now` (not Redis key expiry): the
 * caller's clock decides, as with every other time in the queue.
 */
const WEBHOOK_LUA = `
local P = ARGV[1]
local W = P .. 'wh:{wh}:'
local function bkey(id) return W .. 'b:' .. id end
local function member(seq, id) return string.format('%016d:%s', seq, id) end
local FIELDS = {'state', 'attempts', 'failed', 'status', 'error', 'firstTryAt', 'at', 'nextAt', 'doneAt'}

-- Stores a new batch (holder '' for none); answers its hash. A batch already stored under the id is
-- answered as it is (a repair may store what a node took and died with). skipped: the lists whose
-- take failed, newline-joined ('' for none): claims they hold under the id are not in the batch.
local function new_batch(app, id, body, events, now, holder, lease_end, skipped)
  if redis.call('exists', bkey(id)) == 1 then return redis.call('hgetall', bkey(id)) end
  local seq = redis.call('incr', W .. 'seq')
  local fields = {'id', id, 'app', app, 'body', body, 'events', events, 'state', 'pending', 'attempts', 0,
    'failed', 0, 'status', 0, 'createdAt', now, 'nextAt', now, 'seq', seq}
  if skipped ~= '' then fields[#fields + 1] = 'skipped'; fields[#fields + 1] = skipped end
  if holder ~= '' then
    fields[#fields + 1] = 'holder'; fields[#fields + 1] = holder
    fields[#fields + 1] = 'until'; fields[#fields + 1] = lease_end
  end
  redis.call('hset', bkey(id), unpack(fields))
  redis.call('zadd', W .. 'due', now, member(seq, id))
  redis.call('zadd', W .. 'open', now, id)
  redis.call('zadd', W .. 'batches:' .. app, seq, id)
  redis.call('hincrby', W .. 'states', 'pending', 1)
  return redis.call('hgetall', bkey(id))
end

local function lease(id, holder, lease_end)
  redis.call('hset', bkey(id), 'holder', holder, 'until', lease_end)
end
`;

/**
 * SOURCES: events wait in lists, oldest first, each in its own slot: a room's page-send reports in
 * `{<app>:<room>}:w` (written by the room's publish script), the app's other events in
 * `wh:{<app>}:waiting` (addEvent). The report index (report-index.ts) names the lists that may hold
 * events; the app's own list is its room ''. Forming a batch takes events from lists (TAKE, in the
 * list's slot, recording what it took under the batch id in the list's claims hash `<list>:b`),
 * stores the batch (ADD, in `{wh}`), then drops the claims: a node that dies between leaves claims
 * that the repair walk (prune) stores as batches, so each event goes into one batch.
 */
// KEYS: the list, its claims. ARGV: batch id, max, now. Answers {length left, event...}.
const TAKE_LUA = `
local events = redis.call('lrange', KEYS[1], 0, tonumber(ARGV[2]) - 1)
if #events > 0 then
  redis.call('ltrim', KEYS[1], #events, -1)
  redis.call('hset', KEYS[2], ARGV[1], ARGV[3] .. '\\n' .. table.concat(events, '\\n'))
end
local out = {redis.call('llen', KEYS[1])}
for _, event in ipairs(events) do out[#out + 1] = event end
return out`;

// ARGV: prefix, app, batch id, now, holder ('' for none), until, skipped lists ('' for none), events...
const ADD_LUA = `${WEBHOOK_LUA}
local events = {}
for n = 8, #ARGV do events[#events + 1] = ARGV[n] end
return new_batch(ARGV[2], ARGV[3], '{"events":[' .. table.concat(events, ',') .. ']}', #events, ARGV[4], ARGV[5], ARGV[6], ARGV[7])`;

// ARGV: prefix, app, batch id the events were taken for, id to store them under, time, their list,
// events... Stores claimed events whose batch was not stored (a node died or failed between the
// steps), or was stored without them (their take failed: the list is among its skipped). Answers 1
// if stored (again under the same id: the batch already there).
const RECOVER_LUA = `${WEBHOOK_LUA}
if redis.call('exists', bkey(ARGV[3])) == 1 then
  local skipped = redis.call('hget', bkey(ARGV[3]), 'skipped')
  if not skipped or not string.find('\\n' .. skipped .. '\\n', '\\n' .. ARGV[6] .. '\\n', 1, true) then return 0 end
end
local events = {}
for n = 7, #ARGV do events[#events + 1] = ARGV[n] end
new_batch(ARGV[2], ARGV[4], '{"events":[' .. table.concat(events, ',') .. ']}', #events, ARGV[5], '', '', '')
return 1`;

// ARGV: prefix, now, limit, holder, until. Oldest due first; leased ones are passed over.
const CLAIM_DUE_LUA = `${WEBHOOK_LUA}
local now, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local out, offset = {}, 0
while #out < limit do
  local due = redis.call('zrangebyscore', W .. 'due', '-inf', now, 'LIMIT', offset, 100)
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
  local tries = W .. 'tries:' .. ARGV[13] .. ':' .. ARGV[14]
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
if next_at == '' then redis.call('zrem', W .. 'due', m) else redis.call('zadd', W .. 'due', next_at, m) end
if state == 'pending' or state == 'retrying' then
  redis.call('zadd', W .. 'open', old[3], old[4])
else
  redis.call('zrem', W .. 'open', old[4])
end
if done_at == '' then redis.call('zrem', W .. 'done', old[4]) else redis.call('zadd', W .. 'done', done_at, old[4]) end
if old[1] ~= state then
  redis.call('hincrby', W .. 'states', old[1], -1)
  redis.call('hincrby', W .. 'states', state, 1)
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
  local counts = redis.call('hgetall', W .. 'tries:' .. ARGV[2] .. ':' .. string.format('%d', minute))
  for n = 1, #counts, 2 do
    out[#out + 1] = string.format('%d', minute); out[#out + 1] = counts[n]; out[#out + 1] = counts[n + 1]
  end
end
return out`;

// ARGV: prefix, before. Removes batches done before it; answers how many.
const PRUNE_LUA = `${WEBHOOK_LUA}
local gone = redis.call('zrangebyscore', W .. 'done', '-inf', '(' .. ARGV[2])
for _, id in ipairs(gone) do
  local b = redis.call('hmget', bkey(id), 'app', 'state', 'seq')
  if b[1] then
    redis.call('zrem', W .. 'batches:' .. b[1], id)
    redis.call('zrem', W .. 'due', member(tonumber(b[3]), id))
    redis.call('zrem', W .. 'open', id)
    redis.call('hincrby', W .. 'states', b[2], -1)
    redis.call('del', bkey(id))
  end
  redis.call('zrem', W .. 'done', id)
end
return #gone`;

// ARGV: prefix, app, max. Removes up to max of the app's batches (from every index) and answers how
// many went. Called until it answers 0, so no one call holds Redis long however many batches the
// app has.
const REMOVE_APP_LUA = `${WEBHOOK_LUA}
local app = ARGV[2]
local list = W .. 'batches:' .. app
local ids = redis.call('zrange', list, 0, tonumber(ARGV[3]) - 1)
for _, id in ipairs(ids) do
  local b = redis.call('hmget', bkey(id), 'state', 'seq')
  if b[1] then
    redis.call('zrem', W .. 'due', member(tonumber(b[2]), id))
    redis.call('zrem', W .. 'open', id)
    redis.call('zrem', W .. 'done', id)
    redis.call('hincrby', W .. 'states', b[1], -1)
    redis.call('del', bkey(id))
  end
  redis.call('zrem', list, id)
end
return #ids`;

// ARGV: prefix, app, first minute start, last minute start. Drops the app's tries counted per minute.
const REMOVE_TRIES_LUA = `${WEBHOOK_LUA}
for minute = tonumber(ARGV[3]), tonumber(ARGV[4]), 60000 do
  redis.call('del', W .. 'tries:' .. ARGV[2] .. ':' .. string.format('%d', minute))
end
return 1`;

// ARGV: prefix. Answers {oldest open batch createdAt or '', state, count, ...}.
const STATS_LUA = `${WEBHOOK_LUA}
local open = redis.call('zrange', W .. 'open', 0, 0, 'WITHSCORES')
local out = {open[2] or ''}
local states = redis.call('hgetall', W .. 'states')
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

/** Claims older than this were left by a node that died while storing their batch. */
const CLAIM_STALE_MS = 60_000;
/** How often a node tries again to settle claims of its own that a failure left (see #settle). */
const SETTLE_EVERY_MS = 500;
/** Claims of its own a node keeps to settle; past it (or CLAIM_STALE_MS), the repair walk's. */
const UNSETTLED_MAX = 10_000;
/** A repair walk a new generation starts is tried again after a failure, this many times at most. */
const REPAIR_TRIES = 6;
const REPAIR_RETRY_MS = 1000;
/** How often prune walks the keyspace for lists a dead node left unindexed (a SCAN of every key). */
const REPAIR_EVERY_MS = 5 * 60_000;
const SCAN_COUNT = 500;

/** A list of events waiting: a room's reports, or the app's other events (room ''). */
interface Source {
  app: string;
  room: string;
  list: string;
}

/** Events a node took from a list for a batch, whose storing failed or is in doubt. */
interface Claim {
  source: Source;
  batchId: string;
  at: number;
}

/** The id claimed events are stored under when recovered: the same whoever recovers them. */
function recoveredId(list: string, room: string, batchId: string): string {
  return `${batchId}-r${reportIndexOf(list, batchId).toString(36)}${room.length.toString(36)}`;
}

/** When an event happened, read from the start of its text (`{"id":"...","at":<ms>`); else 0. */
function atOf(event: string): number {
  const match = /^\{"id":"[^"]*","at":(\d+)/.exec(event);
  if (match) return Number(match[1]);
  const found = /"at":(\d+)/.exec(event);
  return found ? Number(found[1]) : 0;
}

/** The lists' events as one, by time; each list's own order kept (ties: the earlier list first). */
function merged(lists: readonly (readonly string[])[]): string[] {
  const heads = lists.map(() => 0);
  const out: string[] = [];
  for (;;) {
    let best = -1;
    let bestAt = 0;
    lists.forEach((list, i) => {
      const event = list[heads[i] ?? 0];
      if (event === undefined) return;
      const at = atOf(event);
      if (best < 0 || at < bestAt) {
        best = i;
        bestAt = at;
      }
    });
    if (best < 0) return out;
    out.push((lists[best] as readonly string[])[heads[best] ?? 0] as string);
    heads[best] = (heads[best] ?? 0) + 1;
  }
}

/**
 * The webhook queue in Redis, shared by every node. Events wait in lists spread over the cluster
 * (see SOURCES); batches and their schedule live in one slot, where each step that reads then
 * writes is one script, so a lease goes to one holder however many nodes ask at once. Taking events
 * from a list is one script in the list's slot, so an event goes into one batch.
 */
export class RedisWebhookStore implements WebhookStore {
  readonly #client: RedisClient;
  readonly #index: ReportIndex;
  readonly #now: () => number;
  readonly #take: Script;
  readonly #add: Script;
  readonly #recover: Script;
  readonly #claimDue: Script;
  readonly #claim: Script;
  readonly #save: Script;
  readonly #tries: Script;
  readonly #list: Script;
  readonly #prune: Script;
  readonly #stats: Script;
  readonly #removeApp: Script;
  readonly #removeTries: Script;
  /** When prune last ran the repair walk. */
  #repaired: number | undefined;
  /** Claims of this node a failure left, by claims key and batch id: settled at once when Redis answers. */
  readonly #unsettled = new Map<string, Claim>();
  #settleTimer: NodeJS.Timeout | undefined;
  #settling = false;
  /** A repair walk started by a new generation, with its retries. */
  #repairing: Promise<void> | undefined;
  #closed = false;

  /** `now` tells only the repair walk how old a claim is (every other time is the caller's). */
  constructor(client: RedisClient, options: { now?: () => number } = {}) {
    this.#client = client;
    this.#index = new ReportIndex(client);
    this.#now = options.now ?? Date.now;
    this.#take = client.script('rtWebhookTake', TAKE_LUA);
    this.#add = client.script('rtWebhookAdd', ADD_LUA);
    this.#recover = client.script('rtWebhookRecover', RECOVER_LUA);
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

  /** The routing key of every batch script: all batch keys share its slot. */
  get #batches(): string[] {
    return [batchKey(this.#prefix)];
  }

  #listOf(app: string, room: string): string {
    return room === '' ? waitingKey(this.#prefix, app) : reportKey(this.#prefix, app, room);
  }

  /**
   * The event, then the index entry when the list went from empty to not (a batcher drops an entry
   * only after seeing the list empty, and looks again after: see #dropIfEmpty).
   */
  async addEvent(app: string, json: string): Promise<void> {
    const length = await this.#client.call((redis) => redis.rpush(waitingKey(this.#prefix, app), json));
    if (length === 1) await this.#index.add(app, '');
  }

  /** Every list the index names (of one app, or of all): the app's own first, then rooms by name. */
  async #sources(only?: string): Promise<Source[]> {
    const prefix = this.#prefix;
    const perIndex = await Promise.all(
      Array.from({ length: REPORT_INDEX_KEYS }, async (_, k) => {
        const apps =
          only === undefined ? await this.#client.call((redis) => redis.smembers(reportAppsKey(prefix, k))) : [only];
        const rooms = await Promise.all(
          apps.map((app) => this.#client.call((redis) => redis.smembers(reportRoomsKey(prefix, k, app)))),
        );
        return apps.flatMap((app, i) => (rooms[i] ?? []).map((room) => ({ app, room, list: this.#listOf(app, room) })));
      }),
    );
    return perIndex.flat().sort((a, b) => (a.app === b.app ? (a.room < b.room ? -1 : 1) : a.app < b.app ? -1 : 1));
  }

  async #lengths(sources: readonly Source[]): Promise<number[]> {
    return await Promise.all(sources.map((source) => this.#client.call((redis) => redis.llen(source.list))));
  }

  /** Drops a list's index entry once it is empty, then looks again: a publish in between puts it back. */
  async #dropIfEmpty(source: Source): Promise<void> {
    await this.#index.drop(source.app, source.room);
    const length = await this.#client.call((redis) => redis.llen(source.list));
    if (length > 0) await this.#index.add(source.app, source.room);
  }

  async waiting(): Promise<Map<string, number>> {
    const sources = await this.#sources();
    const lengths = await this.#lengths(sources);
    const out = new Map<string, number>();
    sources.forEach((source, i) => {
      const length = lengths[i] ?? 0;
      if (length > 0) out.set(source.app, (out.get(source.app) ?? 0) + length);
    });
    return out;
  }

  /**
   * Takes the oldest events of the app's lists (at most max in all; each list's own order kept,
   * lists merged by time), stores them as one batch, then drops the claims. A list that could not
   * be read keeps its events for the next batch.
   */
  async formBatch(app: string, batchId: string, max: number, now: number): Promise<StoredBatch | undefined> {
    const found = await this.#sources(app);
    if (found.length === 0) return undefined;
    // Oldest first: the lists by the time of their first event.
    const [counts, firsts] = await Promise.all([
      this.#lengths(found),
      Promise.all(found.map((source) => this.#client.call((redis) => redis.lindex(source.list, 0)))),
    ]);
    const order = found.map((_, i) => i);
    const startOf = (i: number): number => {
      const first = firsts[i];
      return first ? atOf(first) : Number.POSITIVE_INFINITY;
    };
    order.sort((a, b) => startOf(a) - startOf(b) || a - b);
    const sources = order.map((i) => found[i] as Source);
    const lengths = order.map((i) => counts[i] ?? 0);
    let left = max;
    const quotas = lengths.map((length) => {
      const quota = Math.max(0, Math.min(left, length));
      left -= quota;
      return quota;
    });
    const taken = await Promise.allSettled(
      sources.map(async (source, i): Promise<{ left: number; events: string[] }> => {
        const quota = quotas[i] ?? 0;
        if (quota === 0) return { left: lengths[i] ?? 0, events: [] };
        const reply = await this.#take([source.list, claimsKeyOf(source.list)], [batchId, quota, now]);
        const parts = Array.isArray(reply) ? reply.map(String) : [];
        return { left: Number(parts[0] ?? 0), events: parts.slice(1) };
      }),
    );
    const lists = taken.map((result) => (result.status === 'fulfilled' ? result.value.events : []));
    // A take that failed may still have run (its answer lost): what it claimed is not in this batch.
    const skipped = sources.filter((_, i) => taken[i]?.status === 'rejected');
    for (const source of skipped) this.#leftUnsettled(source, batchId);
    const events = merged(lists);
    if (events.length === 0) {
      const failure = taken.find((result) => result.status === 'rejected');
      if (failure) throw toStoreError(failure.reason);
    }
    let batch: StoredBatch | undefined;
    if (events.length > 0) {
      const holding = sources.filter((_, i) => (lists[i]?.length ?? 0) > 0);
      try {
        const skippedLists = skipped.map((source) => source.list).join('\n');
        batch = toBatch(
          await this.#add(this.#batches, [this.#prefix, app, batchId, now, '', '', skippedLists, ...events]),
        );
      } catch (error) {
        // Stored or not, it cannot tell: the claims are settled as soon as the batches' shard answers.
        for (const source of holding) this.#leftUnsettled(source, batchId);
        throw error;
      }
      const dropped = await Promise.allSettled(
        holding.map((source) => this.#client.call((redis) => redis.hdel(claimsKeyOf(source.list), batchId))),
      );
      dropped.forEach((result, i) => {
        if (result.status === 'rejected') this.#leftUnsettled(holding[i] as Source, batchId);
      });
    }
    await Promise.all(
      sources.map((source, i) => {
        const result = taken[i];
        return result?.status === 'fulfilled' && result.value.left === 0 ? this.#dropIfEmpty(source) : undefined;
      }),
    );
    return batch;
  }

  async addBatch(
    app: string,
    batchId: string,
    events: string[],
    now: number,
    lease: { holder: string; ms: number },
  ): Promise<StoredBatch> {
    const batch = toBatch(
      await this.#add(this.#batches, [this.#prefix, app, batchId, now, lease.holder, now + lease.ms, '', ...events]),
    );
    if (!batch) throw new Error('the batch script answered no batch');
    return batch;
  }

  async claimDue(now: number, limit: number, lease: { holder: string; ms: number }): Promise<StoredBatch[]> {
    return toBatches(await this.#claimDue(this.#batches, [this.#prefix, now, limit, lease.holder, now + lease.ms]));
  }

  async claim(
    id: string,
    now: number,
    lease: { holder: string; ms: number },
  ): Promise<StoredBatch | 'busy' | undefined> {
    const reply = await this.#claim(this.#batches, [this.#prefix, id, now, lease.holder, now + lease.ms]);
    return reply === 'busy' ? 'busy' : toBatch(reply);
  }

  async get(id: string): Promise<StoredBatch | undefined> {
    const key = `${batchKey(this.#prefix)}:b:${id}`;
    return toBatch(await this.#client.call((redis) => redis.hgetall(key).then(flatten)));
  }

  async list(app: string, limit: number): Promise<StoredBatch[]> {
    if (limit <= 0) return [];
    return toBatches(
      await this.#list(this.#batches, [this.#prefix, `${batchKey(this.#prefix)}:batches:${app}`, limit]),
    );
  }

  async saveTry(batch: StoredBatch, holder: string, tried?: TryOutcome): Promise<void> {
    const minute = Math.floor((batch.at ?? 0) / MINUTE_MS) * MINUTE_MS;
    await this.#save(this.#batches, [
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
    ]);
  }

  async tryCounts(app: string, sinceMs: number, nowMs: number): Promise<TryMinute[]> {
    const from = Math.max(Math.floor(sinceMs / MINUTE_MS), Math.floor((nowMs - TRY_COUNTS_KEPT_MS) / MINUTE_MS) + 1);
    const to = Math.floor(nowMs / MINUTE_MS);
    if (to < from) return [];
    const reply = await this.#tries(this.#batches, [this.#prefix, app, from * MINUTE_MS, to * MINUTE_MS]);
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

  /** Removes old batches; walks the lists (see repair) at the first prune and every REPAIR_EVERY_MS. */
  async prune(before: number): Promise<number> {
    const gone = Number(await this.#prune(this.#batches, [this.#prefix, before]));
    const now = this.#now();
    if (this.#repaired === undefined || now - this.#repaired >= REPAIR_EVERY_MS) {
      await this.repair();
      this.#repaired = now;
    }
    return gone;
  }

  /**
   * The repair walk (SCAN on every primary; prune runs it): a list with events and no index entry
   * (a node died between a publish's steps) gets one; claims older than CLAIM_STALE_MS (a node died
   * while forming their batch) are stored as a batch unless theirs was, then dropped.
   */
  async repair(): Promise<void> {
    const prefix = this.#prefix;
    const escaped = prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
    const lists: Source[] = [];
    const claims: Source[] = [];
    await this.#client.forEachPrimary(async (redis) => {
      for (const [pattern, into] of [
        [reportListPattern(prefix), lists],
        [`${escaped}wh:{*}:waiting`, lists],
        [reportClaimsPattern(prefix), claims],
        [`${escaped}wh:{*}:waiting:b`, claims],
      ] as const) {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
          cursor = next;
          for (const key of keys) {
            const source = this.#sourceOf(key);
            if (source) into.push(source);
          }
        } while (cursor !== '0');
      }
    });
    const lengths = await this.#lengths(lists);
    await Promise.all(
      lists.map((source, i) => ((lengths[i] ?? 0) > 0 ? this.#index.add(source.app, source.room) : undefined)),
    );
    const stale = this.#now() - CLAIM_STALE_MS;
    for (const source of claims) {
      const held = await this.#client.call((redis) => redis.hgetall(source.list));
      for (const [batchId, value] of Object.entries(held)) {
        const [at, ...events] = value.split('\n');
        if (Number(at) > stale) continue;
        const list = listOfClaims(source.list);
        if (events.length > 0) {
          const id = recoveredId(list, source.room, batchId);
          await this.#recover(this.#batches, [prefix, source.app, batchId, id, Number(at), list, ...events]);
        }
        await this.#client.call((redis) => redis.hdel(source.list, batchId));
      }
    }
  }

  /**
   * Notes claims this node made whose batch may not hold them (a take, a store or a claim drop
   * failed, or its answer was lost), to settle as soon as Redis answers: without it they would wait
   * for the repair walk (CLAIM_STALE_MS at least), as if this node had died.
   */
  #leftUnsettled(source: Source, batchId: string): void {
    const key = `${claimsKeyOf(source.list)}\n${batchId}`;
    if (this.#unsettled.size >= UNSETTLED_MAX && !this.#unsettled.has(key)) return;
    // Aged by this node's clock, as the repair walk ages claims by its own.
    this.#unsettled.set(key, { source, batchId, at: this.#now() });
    if (this.#settleTimer === undefined && !this.#closed) {
      this.#settleTimer = setInterval(() => void this.#settle(), SETTLE_EVERY_MS);
      this.#settleTimer.unref();
    }
  }

  /**
   * Each claim noted: stored as a batch unless its batch holds it, then dropped. One that fails
   * stays for the next tick; one older than CLAIM_STALE_MS is left to the repair walk.
   */
  async #settle(): Promise<void> {
    if (this.#settling || this.#closed) return;
    this.#settling = true;
    try {
      const stale = this.#now() - CLAIM_STALE_MS;
      await Promise.all(
        [...this.#unsettled].map(async ([key, claim]) => {
          if (claim.at < stale) {
            this.#unsettled.delete(key);
            return;
          }
          try {
            await this.#settleOne(claim);
            this.#unsettled.delete(key);
          } catch {
            // Its shard still does not answer: the next tick tries again.
          }
        }),
      );
    } finally {
      this.#settling = false;
      if (this.#unsettled.size === 0 || this.#closed) {
        clearInterval(this.#settleTimer);
        this.#settleTimer = undefined;
      }
    }
  }

  async #settleOne({ source, batchId }: Claim): Promise<void> {
    const claims = claimsKeyOf(source.list);
    const held = await this.#client.call((redis) => redis.hget(claims, batchId));
    if (held === null) return;
    const [at, ...events] = held.split('\n');
    if (events.length > 0) {
      const id = recoveredId(source.list, source.room, batchId);
      await this.#recover(this.#batches, [this.#prefix, source.app, batchId, id, Number(at), source.list, ...events]);
    }
    await this.#client.call((redis) => redis.hdel(claims, batchId));
  }

  /**
   * The repair walk, tried again (a few times, seconds apart) while it fails: a new generation
   * starts it while the cluster may still be settling. Not awaited by the caller; one at a time.
   */
  repairSoon(): void {
    if (this.#repairing || this.#closed) return;
    this.#repairing = (async () => {
      for (let tries = 0; tries < REPAIR_TRIES && !this.#closed; tries += 1) {
        try {
          await this.repair();
          return;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, REPAIR_RETRY_MS * 2 ** tries).unref());
        }
      }
    })().finally(() => {
      this.#repairing = undefined;
    });
  }

  /** The app and room of a list or claims key found by SCAN (the key itself as `list`). */
  #sourceOf(key: string): Source | undefined {
    const prefix = this.#prefix;
    const app = /^wh:\{([^}:]*)\}:waiting(:b)?$/.exec(key.slice(prefix.length));
    if (app?.[1] !== undefined) return { app: app[1], room: '', list: key };
    const room = /^\{([^:}]*):(.*)\}:w(:b)?$/s.exec(key.slice(prefix.length));
    if (room?.[1] !== undefined && room[2] !== undefined) return { app: room[1], room: room[2], list: key };
    return undefined;
  }

  async stats(now: number): Promise<WebhookStats> {
    const sources = await this.#sources();
    const [lengths, firsts, reply] = await Promise.all([
      this.#lengths(sources),
      Promise.all(sources.map((source) => this.#client.call((redis) => redis.lindex(source.list, 0)))),
      this.#stats(this.#batches, [this.#prefix]),
    ]);
    const parts = Array.isArray(reply) ? reply.map(String) : [];
    const starts: number[] = [];
    for (const first of firsts) if (first) starts.push(atOf(first));
    if (parts[0]) starts.push(Number(parts[0]));
    const batches: WebhookStats['batches'] = {};
    for (let i = 1; i + 1 < parts.length; i += 2) batches[parts[i] as DeliveryState] = Number(parts[i + 1]);
    return {
      waiting: lengths.reduce((sum, length) => sum + length, 0),
      oldestWaitingMs: starts.length === 0 ? 0 : Math.max(0, now - Math.min(...starts)),
      batches,
    };
  }

  /**
   * Through the app's own indexes, never a SCAN for batches: its batch list, its tries by the
   * minutes a count can be kept (a day back from `nowMs`, and the minute ahead a clock may be);
   * its waiting events: its own list, and its rooms' lists (a SCAN on every primary, as for
   * history: the publish path keeps no list of an app's rooms).
   */
  async removeApp(app: string, nowMs: number): Promise<void> {
    // A chunk a call: other scripts run in between.
    let gone: number;
    do gone = Number(await this.#removeApp(this.#batches, [this.#prefix, app, REMOVE_CHUNK]));
    while (gone > 0);
    const last = (Math.floor(nowMs / MINUTE_MS) + 1) * MINUTE_MS;
    await this.#removeTries(this.#batches, [this.#prefix, app, last - TRY_COUNTS_KEPT_MS - 2 * MINUTE_MS, last]);
    const prefix = this.#prefix;
    await Promise.all(
      Array.from({ length: REPORT_INDEX_KEYS }, async (_, k) => {
        await this.#client.call((redis) => redis.del(reportRoomsKey(prefix, k, app)));
        await this.#client.call((redis) => redis.srem(reportAppsKey(prefix, k), app));
      }),
    );
    const own = waitingKey(prefix, app);
    await this.#client.call((redis) => redis.unlink(own));
    await this.#client.call((redis) => redis.unlink(claimsKeyOf(own)));
    await this.#client.forEachPrimary(async (redis) => {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', appReportsPattern(prefix, app), 'COUNT', SCAN_COUNT);
        cursor = next;
        // One key a command: the keys are in different slots.
        await Promise.all(keys.map((key) => redis.unlink(key)));
      } while (cursor !== '0');
    });
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
    this.#closed = true;
    clearInterval(this.#settleTimer);
    this.#settleTimer = undefined;
  }
}

/** HGETALL's record as the flat list the scripts answer. */
function flatten(record: Record<string, string>): string[] {
  return Object.entries(record).flat();
}
