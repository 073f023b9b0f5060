import type { HistoryRule } from '@realtime/protocol';
import type { HistoryPage, HistoryStore, KeptCount, KeptEvent, PageBound, ResumeResult } from '../types.js';
import type { RedisClient, Script } from './client.js';
import { appRoomsPattern, expiryStackPattern, roomKeys, roomKeysOfStack } from './keys.js';
import { ROOM_LUA } from './room-lua.js';

const HOUR_MS = 3_600_000;
/** "No bound" as a number Lua reads exactly. */
const UNBOUNDED = 1e15;
const SCAN_COUNT = 500;

const APPEND_LUA = `${ROOM_LUA}
local room = open_room(room_keys(1), ARGV[1], ARGV[2], tonumber(ARGV[3]))
local from = false
if ARGV[9] == '1' then from = ARGV[8] end
local id = append(room, tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7], from)
save_room(room)
return id`;

const NEXT_ID_LUA = `${ROOM_LUA}
local room = open_room(room_keys(1), ARGV[1], ARGV[2], tonumber(ARGV[3]))
local id = skip(room, tonumber(ARGV[3]))
save_room(room)
return id`;

// Answers {epoch, remaining, dropped, truncated, id, event, data, from|nil, ...}.
const SINCE_LUA = `${ROOM_LUA}
local room = open_room(room_keys(1), ARGV[1], ARGV[2], tonumber(ARGV[3]))
trim_age(room, tonumber(ARGV[3]))
local after = parse_id(ARGV[4]) or {-1, -1}
local lo = position_after(room, after)
local total = redis.call('llen', room.k.i) - lo
local out = {room.epoch, 0, 0, 0}
out[2] = total - read_page(room, lo, total, tonumber(ARGV[6]), tonumber(ARGV[7]), out)
if ARGV[5] ~= '' and ARGV[5] ~= room.epoch then
  -- The id is of a lost stream: a gap, though not one a slow reader fell into.
  out[4] = 1
else
  local dropped = room.dropped ~= nil and later(room.dropped, after)
  local missed = room.unkept ~= nil and later(room.unkept, after)
  -- Without the epoch, an id from before the stream began names an event of a lost one (0-0 names
  -- none: "from the start"), unless the stream still holds it: a restart that kept the data (a new
  -- generation) keeps its events below where the new epoch began. With the room's epoch, the reader
  -- saw only this stream, kept events included: nothing was lost.
  local before = ARGV[5] == '' and room.began ~= nil and after[1] > 0 and later(room.began, after)
    and #redis.call('xrange', room.k.s, fmt(after), fmt(after)) == 0
  if dropped then out[3] = 1 end
  if dropped or missed or before then out[4] = 1 end
end
save_room(room)
return out`;

// Answers {epoch, remaining, id, event, data, from|nil, ...}.
const LAST_LUA = `${ROOM_LUA}
local room = open_room(room_keys(1), ARGV[1], ARGV[2], tonumber(ARGV[3]))
trim_age(room, tonumber(ARGV[3]))
local len = redis.call('llen', room.k.i)
local total = math.max(0, math.min(tonumber(ARGV[4]), len))
local out = {room.epoch, 0}
out[2] = total - read_page(room, len - total, total, tonumber(ARGV[5]), tonumber(ARGV[6]), out)
save_room(room)
return out`;

// Answers {epoch, kept events}.
const COUNT_LUA = `${ROOM_LUA}
local room = open_room(room_keys(1), ARGV[1], ARGV[2], tonumber(ARGV[3]))
trim_age(room, tonumber(ARGV[3]))
local out = {room.epoch, redis.call('llen', room.k.i)}
save_room(room)
return out`;

// Ages out one room's events without touching its epoch (prune needs no generation); answers how many went.
const PRUNE_LUA = `${ROOM_LUA}
local room = {k = room_keys(1), dropped = parse_id(redis.call('hget', KEYS[1], 'd')), dirty = false}
local gone = trim_age(room, tonumber(ARGV[1]))
if room.dirty and redis.call('exists', KEYS[1]) == 1 then
  redis.call('hset', KEYS[1], 'd', fmt(room.dropped))
end
return gone`;

function bound(page: PageBound | undefined): [number, number] {
  if (!page) return [UNBOUNDED, UNBOUNDED];
  return [Math.max(1, Math.min(page.events, UNBOUNDED)), Math.max(0, Math.min(page.bytes, UNBOUNDED))];
}

/** Reads the flat id, event, data, from quadruples a room script answers from `start`. */
function toEvents(reply: readonly unknown[], start: number): KeptEvent[] {
  const events: KeptEvent[] = [];
  for (let i = start; i + 3 < reply.length; i += 4) {
    const event: KeptEvent = { id: String(reply[i]), event: String(reply[i + 1]), data: String(reply[i + 2]) };
    const from = reply[i + 3];
    if (typeof from === 'string') event.from = from;
    events.push(event);
  }
  return events;
}

function asArray(reply: unknown): unknown[] {
  if (!Array.isArray(reply)) throw new Error('a history script answered no list');
  return reply;
}

/**
 * Room history in Redis (see room-lua.ts for the keys and rules). Every call is one script, so id
 * assignment, storage, trims and the epoch check are atomic per room, whichever node calls.
 */
export class RedisHistoryStore implements HistoryStore {
  readonly #client: RedisClient;
  readonly #append: Script;
  readonly #nextId: Script;
  readonly #since: Script;
  readonly #last: Script;
  readonly #count: Script;
  readonly #prune: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#append = client.script('rtHistoryAppend', APPEND_LUA);
    this.#nextId = client.script('rtHistoryNextId', NEXT_ID_LUA);
    this.#since = client.script('rtHistorySince', SINCE_LUA);
    this.#last = client.script('rtHistoryLast', LAST_LUA);
    this.#count = client.script('rtHistoryCount', COUNT_LUA);
    this.#prune = client.script('rtHistoryPrune', PRUNE_LUA);
  }

  #room(app: string, room: string): string[] {
    return roomKeys(this.#client.prefix, app, room);
  }

  /** The generation and a fresh epoch, the first two arguments of every room script. */
  #open(): [string, string] {
    return [this.#client.generation, this.#client.newEpoch()];
  }

  async append(
    app: string,
    room: string,
    entry: { event: string; data: string; from?: string },
    rule: HistoryRule,
    nowMs: number,
  ): Promise<string> {
    const [limit, hours] = rule;
    const id = await this.#append(this.#room(app, room), [
      ...this.#open(),
      Math.floor(nowMs),
      limit,
      Math.round(hours * HOUR_MS),
      entry.event,
      entry.data,
      entry.from ?? '',
      entry.from === undefined ? '0' : '1',
    ]);
    return String(id);
  }

  async nextId(app: string, room: string, nowMs: number): Promise<string> {
    return String(await this.#nextId(this.#room(app, room), [...this.#open(), Math.floor(nowMs)]));
  }

  async since(
    app: string,
    room: string,
    afterId: string,
    nowMs: number,
    page?: PageBound,
    epoch?: string,
  ): Promise<ResumeResult> {
    const reply = asArray(
      await this.#since(this.#room(app, room), [
        ...this.#open(),
        Math.floor(nowMs),
        afterId,
        epoch ?? '',
        ...bound(page),
      ]),
    );
    return {
      events: toEvents(reply, 4),
      remaining: Number(reply[1]),
      truncated: reply[3] === 1,
      dropped: reply[2] === 1,
      epoch: String(reply[0]),
    };
  }

  async last(app: string, room: string, count: number, nowMs: number, page?: PageBound): Promise<HistoryPage> {
    const reply = asArray(
      await this.#last(this.#room(app, room), [...this.#open(), Math.floor(nowMs), Math.max(0, count), ...bound(page)]),
    );
    return { events: toEvents(reply, 2), remaining: Number(reply[1]), epoch: String(reply[0]) };
  }

  async count(app: string, room: string, nowMs: number): Promise<KeptCount> {
    const reply = asArray(await this.#count(this.#room(app, room), [...this.#open(), Math.floor(nowMs)]));
    return { count: Number(reply[1]), epoch: String(reply[0]) };
  }

  /**
   * Rooms age out on every write and read, and their keys expire with their newest event; this
   * walks every room with kept events (SCAN, on every primary) to drop what aged meanwhile, for
   * memory and the count.
   */
  async prune(nowMs: number): Promise<number> {
    const pattern = expiryStackPattern(this.#client.prefix);
    const removed = await this.#client.forEachPrimary(async (redis) => {
      let cursor = '0';
      let gone = 0;
      do {
        const [next, stacks] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        const counts = await Promise.all(
          stacks.map((stack) => this.#prune(roomKeysOfStack(stack), [Math.floor(nowMs)])),
        );
        for (const n of counts) gone += Number(n);
      } while (cursor !== '0');
      return gone;
    });
    return removed.reduce((sum, n) => sum + n, 0);
  }

  /**
   * Rooms have no index by app (the publish path would pay for one on every event), so this walks
   * the keyspace once (SCAN on every primary, as prune does every minute) and unlinks each key of
   * the app's rooms, meta included: a room written again starts a new stream with a new epoch.
   */
  async removeApp(app: string): Promise<void> {
    const pattern = appRoomsPattern(this.#client.prefix, app);
    await this.#client.forEachPrimary(async (redis) => {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        cursor = next;
        // One key a command: the rooms are in different slots.
        await Promise.all(keys.map((key) => redis.unlink(key)));
      } while (cursor !== '0');
    });
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}
