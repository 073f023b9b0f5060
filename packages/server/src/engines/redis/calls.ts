import calculateSlot from 'cluster-key-slot';
import { nodeOfPage } from '../node-id.js';
import { StoreError } from '../store-error.js';
import type { CallRecord, CallStore } from '../types.js';
import { type RedisClient, type Script, toStoreError } from './client.js';

/**
 * The call scripts. Each works in one slot, the app's (`{<app>}`), on the keys it is given: a call's
 * hash and the index keys of its two users, so whether a user is in a call is decided in one place.
 * A call's keys (after the prefix):
 * - `call:{<app>}:c:<id>` hash of the CallRecord's fields (numbers as their shortest decimal text,
 *   `media` as JSON; `toPage` and `answeredAt` absent while it rings);
 * - `call:{<app>}:u:<user>` the id of the call the user is in; one whose call hash is gone counts
 *   as free, so the user index can never keep anyone busy longer than the call.
 * A call's keys expire a day after its ring ends, or a week after it was answered: a safety net only,
 * since every call leaves by `end`, by ringing out, or with its page's node.
 */

// KEYS: the call, its caller's and callee's index, then the call each of them held when the caller
// read their index (the new call's key when none). ARGV: id, keep ms, the ids read ('' for none),
// then field, value pairs. 'retry' when an index changed since it was read.
const PLACE_LUA = `
local c = KEYS[1]
local function held(u, read, k)
  local id = redis.call('get', u) or ''
  if id ~= read then return 'retry' end
  if id ~= '' and redis.call('exists', k) == 1 then return 'yes' end
  return 'no'
end
local from = held(KEYS[2], ARGV[3], KEYS[4])
if from ~= 'no' then return from == 'yes' and 'in_call' or from end
local to = held(KEYS[3], ARGV[4], KEYS[5])
if to ~= 'no' then return to == 'yes' and 'busy' or to end
redis.call('del', c)
redis.call('hset', c, unpack(ARGV, 5))
local keep = 86400000 + math.max(0, tonumber(ARGV[2]))
for _, k in ipairs({KEYS[2], KEYS[3]}) do redis.call('set', k, ARGV[1], 'PX', keep) end
redis.call('pexpire', c, keep)
return 'placed'`;

// KEYS: the call, its users' indexes. ARGV: id, page, now. Answers { 1, the record } once answered,
// else { 0, the page that answered it ('' when it is gone) }.
const ANSWER_LUA = `
local c = KEYS[1]
if redis.call('exists', c) == 0 then return { 0, '' } end
local answered = redis.call('hget', c, 'toPage')
if answered then return { 0, answered } end
redis.call('hset', c, 'toPage', ARGV[2], 'answeredAt', ARGV[3])
redis.call('pexpire', c, 604800000)
for _, k in ipairs({KEYS[2], KEYS[3]}) do
  if redis.call('get', k) == ARGV[1] then redis.call('pexpire', k, 604800000) end
end
return { 1, redis.call('hgetall', c) }`;

// KEYS: the call, its users' indexes. ARGV: id, 'any' or 'missed', now. Removes the call and answers
// its record, to the one caller that removed it, else false; 'missed' only while it rings past now.
const END_LUA = `
local c = KEYS[1]
local flat = redis.call('hgetall', c)
if #flat == 0 then return false end
if ARGV[2] == 'missed' then
  local call = {}
  for i = 1, #flat, 2 do call[flat[i]] = flat[i + 1] end
  if call['toPage'] or tonumber(call['ringUntil']) > tonumber(ARGV[3]) then return false end
end
redis.call('del', c)
for _, k in ipairs({KEYS[2], KEYS[3]}) do
  if redis.call('get', k) == ARGV[1] then redis.call('del', k) end
end
return flat`;

/**
 * Index keys outside the calls' slots, each a set or zset of `<app>:<id>` (app keys hold no ':'):
 * - `call:n:{<node>}` the calls with a page on the node: what `takeNode` takes once the node died
 *   (the node leases are NodeStore's);
 * - `call:ring:{call-ring-<n>}` (n < RINGS) the ringing calls by ringUntil, each call in the zset of
 *   its name's hash: a few zsets on as many slots, so no one key takes every call, and a ring sweep
 *   reads RINGS keys.
 * A call is recorded in them before the script that places or answers it, and cleared after the one
 * that ends it: a crash in between leaves a name whose call is gone (the sweeps drop it) or ends
 * later (the sweeps take it), never a call no sweep finds.
 */
const RINGS = 8;

/** Rounds of a sweep that finds names of calls already gone; bounded so a sweep always answers. */
const MAX_ROUNDS = 1000;

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

/** Runs every step: what succeeded, and the first failure if one failed. */
async function settled<T>(steps: Promise<T>[]): Promise<{ done: T[]; failure?: unknown }> {
  const results = await Promise.allSettled(steps);
  const done = results.filter((r): r is PromiseFulfilledResult<Awaited<T>> => r.status === 'fulfilled');
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  return failed ? { done: done.map((r) => r.value), failure: failed.reason } : { done: done.map((r) => r.value) };
}

/**
 * After a sweep's round: a failure is thrown when nothing was taken yet, else the sweep answers what
 * it took (each must reach its caller) and leaves the rest for a later one.
 */
function stopAt(failure: unknown, taken: readonly unknown[]): boolean {
  if (failure === undefined) return false;
  if (taken.length === 0) throw toStoreError(failure);
  return true;
}

/** `<app>:<id>` as app and id (app keys hold no ':'); undefined for a name nothing of ours wrote. */
function splitName(name: string): [string, string] | undefined {
  const colon = name.indexOf(':');
  return colon > 0 ? [name.slice(0, colon), name.slice(colon + 1)] : undefined;
}

/**
 * Calls on Redis, shared by every node: each decision is one script in the app's slot, so a user is
 * in one call however many nodes place at once, and a call that ends (by `end`, ringing out, or with
 * its page's node) reaches one caller. The node and ring indexes live in other slots, written in
 * steps around those scripts (see RINGS).
 */
export class RedisCallStore implements CallStore {
  readonly #client: RedisClient;
  readonly #place: Script;
  readonly #answer: Script;
  readonly #end: Script;
  readonly #rings: string[];

  constructor(client: RedisClient) {
    this.#client = client;
    this.#place = client.script('rtCallPlace', PLACE_LUA);
    this.#answer = client.script('rtCallAnswer', ANSWER_LUA);
    this.#end = client.script('rtCallEnd', END_LUA);
    this.#rings = Array.from({ length: RINGS }, (_, n) => client.key(`call:ring:{call-ring-${n}}`));
  }

  #call(app: string, id: string): string {
    return this.#client.key(`call:{${app}}:c:${id}`);
  }

  #user(app: string, user: string): string {
    return this.#client.key(`call:{${app}}:u:${user}`);
  }

  #node(page: string): string {
    return this.#client.key(`call:n:{${nodeOfPage(page)}}`);
  }

  #ring(app: string, id: string): string {
    return this.#rings[calculateSlot(`${app}:${id}`) % RINGS] ?? '';
  }

  async place(call: CallRecord): Promise<'placed' | 'busy' | 'in_call'> {
    const { app, id } = call;
    const name = `${app}:${id}`;
    const c = this.#call(app, id);
    const users = [this.#user(app, call.from), this.#user(app, call.to)];
    const ringMs = Math.ceil(Math.max(0, call.ringUntil - call.startedAt));
    const node = this.#node(call.fromPage);
    const ring = this.#ring(app, id);
    const readUsers = () => this.#client.call((redis) => redis.mget(...users));
    // Recorded first, so a sweep finds the call whatever happens next (the users' read meanwhile).
    const [, , first] = await Promise.all([
      this.#client.call((redis) => redis.sadd(node, name)),
      this.#client.call((redis) => redis.zadd(ring, call.ringUntil, name)),
      readUsers(),
    ]);
    for (let attempt = 0; attempt < 10; attempt++) {
      const held = attempt === 0 ? first : await readUsers();
      const read = [held[0] ?? '', held[1] ?? ''];
      const outcome = await this.#place(
        [c, ...users, ...read.map((held) => (held === '' ? c : this.#call(app, held)))],
        [id, ringMs, ...read, ...fieldsOf(call)],
      );
      if (outcome === 'retry') continue;
      if (outcome === 'busy' || outcome === 'in_call') {
        await this.#clear(name, [node], ring);
        return outcome;
      }
      return 'placed';
    }
    // The users' indexes kept changing under it: nothing was placed.
    await this.#clear(name, [node], ring);
    throw new StoreError('unavailable', { message: `placing call ${id} kept racing other calls` });
  }

  async answer(app: string, id: string, page: string, nowMs: number): Promise<CallRecord | undefined> {
    const [from, to, fromPage] = await this.#client.call((redis) =>
      redis.hmget(this.#call(app, id), 'from', 'to', 'fromPage'),
    );
    if (typeof from !== 'string' || typeof to !== 'string' || typeof fromPage !== 'string') return undefined;
    const name = `${app}:${id}`;
    const node = this.#node(page);
    // On the answering page's node first, so that node's death ends the call once it is answered.
    await this.#client.call((redis) => redis.sadd(node, name));
    const reply = await this.#answer(
      [this.#call(app, id), this.#user(app, from), this.#user(app, to)],
      [id, page, nowMs],
    );
    const [answered, detail] = Array.isArray(reply) ? (reply as unknown[]) : [];
    if (answered === 1) {
      await this.#clear(name, [], this.#ring(app, id));
      return toRecord(fieldsOfReply(detail));
    }
    // Not answered here: the name stays only where a page of the call still is.
    const other = typeof detail === 'string' && detail !== '' ? this.#node(detail) : undefined;
    if (node !== this.#node(fromPage) && node !== other) await this.#clear(name, [node]);
    return undefined;
  }

  async end(app: string, id: string): Promise<CallRecord | undefined> {
    return this.#take(app, id, 'any', 0);
  }

  async get(app: string, id: string): Promise<CallRecord | undefined> {
    const key = this.#call(app, id);
    return toRecord(await this.#client.call((redis) => redis.hgetall(key)));
  }

  async callOf(app: string, user: string): Promise<CallRecord | undefined> {
    const id = await this.#client.call((redis) => redis.get(this.#user(app, user)));
    return id === null ? undefined : this.get(app, id);
  }

  async takeMissed(nowMs: number, limit: number): Promise<CallRecord[]> {
    const taken: CallRecord[] = [];
    const cap = Number.isFinite(limit) ? Math.floor(limit) : 1_000_000;
    let rings = cap >= 1 ? this.#rings : [];
    for (let round = 0; round < MAX_ROUNDS && rings.length > 0 && taken.length < cap; round++) {
      const want = cap - taken.length;
      const { done: due, failure } = await settled(
        rings.map(async (ring) => ({
          ring,
          names: await this.#client.call((redis) => redis.zrangebyscore(ring, '-inf', nowMs, 'LIMIT', 0, want)),
        })),
      );
      if (due.length === 0) stopAt(failure, taken);
      rings = due.filter((d) => d.names.length > 0).map((d) => d.ring);
      const names = due.flatMap((d) => d.names.map((name) => ({ ring: d.ring, name }))).slice(0, want);
      const calls = await settled(
        names.map(async ({ ring, name }) => {
          const [app, id] = splitName(name) ?? ['', ''];
          const call = app === '' ? undefined : await this.#take(app, id, 'missed', nowMs);
          // Out of the ring either way: an answered call or a gone one never rings again.
          await this.#clear(name, [], ring);
          return call;
        }),
      );
      for (const call of calls.done) if (call) taken.push(call);
      if (stopAt(calls.failure, taken)) break;
    }
    return taken;
  }

  async takeNode(node: string, limit: number): Promise<CallRecord[]> {
    const set = this.#client.key(`call:n:{${node}}`);
    const cap = Number.isFinite(limit) ? Math.floor(limit) : 1_000_000;
    const taken: CallRecord[] = [];
    for (let round = 0; round < MAX_ROUNDS && taken.length < cap; round++) {
      const names = await this.#client.call((redis) => redis.srandmember(set, cap - taken.length));
      if (names.length === 0) break;
      const calls = await settled(
        names.map(async (name) => {
          const [app, id] = splitName(name) ?? ['', ''];
          const call = app === '' ? undefined : await this.#take(app, id, 'any', 0);
          // Out of the node's set either way: a taken call left every index, a gone one has nothing left.
          await this.#clear(name, [set]);
          return call;
        }),
      );
      for (const call of calls.done) if (call) taken.push(call);
      if (stopAt(calls.failure, taken)) break;
    }
    return taken;
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }

  /**
   * Ends the call (`missed`: only while it rings past `nowMs`) and answers its record to the one
   * caller that ended it, then takes its name out of the indexes.
   */
  async #take(app: string, id: string, mode: 'any' | 'missed', nowMs: number): Promise<CallRecord | undefined> {
    // A call's users never change: read once, they name the index keys the script is given.
    const [from, to] = await this.#client.call((redis) => redis.hmget(this.#call(app, id), 'from', 'to'));
    if (typeof from !== 'string' || typeof to !== 'string') return undefined;
    const reply = await this.#end([this.#call(app, id), this.#user(app, from), this.#user(app, to)], [id, mode, nowMs]);
    const call = toRecord(fieldsOfReply(reply));
    if (!call) return undefined;
    const nodes = [this.#node(call.fromPage)];
    if (call.toPage !== undefined) nodes.push(this.#node(call.toPage));
    await this.#clear(`${app}:${id}`, nodes, call.toPage === undefined ? this.#ring(app, id) : undefined);
    return call;
  }

  /** Takes a call's name out of index keys, after the decision: a failure leaves it to the sweeps. */
  async #clear(name: string, sets: string[], ring?: string): Promise<void> {
    await Promise.allSettled([
      ...[...new Set(sets)].map((key) => this.#client.call((redis) => redis.srem(key, name))),
      ...(ring === undefined ? [] : [this.#client.call((redis) => redis.zrem(ring, name))]),
    ]);
  }
}
