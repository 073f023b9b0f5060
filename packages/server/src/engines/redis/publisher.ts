import type { Outgoing, OutgoingRoomEvent } from '../types.js';
import { topicOf } from '../types.js';
import { type RedisArg, type RedisClient, type Script, toStoreError } from './client.js';
import { roomKeys, waitingAppsKey, waitingKey } from './keys.js';
import { encodePublication } from './publication-codec.js';
import { ROOM_LUA } from './room-lua.js';

/** Arguments per event in the publish script (after gen, epoch, now, count). */
const FIELDS = 15;

/**
 * One call of Broker.publish. Per event (FIELDS arguments from 5 + n * FIELDS):
 * kind (k: kept room event, r: room event not kept, p: presence change, u: any other publication),
 * the room's first key, channel, header head (the whole header for p/u; see publication-codec.ts),
 * header tail, data (the body for p/u), event, limit, hours in ms, from, has-from, report before,
 * report after, waiting key index (0: no report), app.
 * Everything is stored first, then everything is published, so a failure stores nothing and
 * publishes nothing (Redis refuses a script for lack of memory at its first write, before any).
 * Answers the ids, nil for p and u.
 */
const PUBLISH_LUA = `${ROOM_LUA}
local gen, epoch, now, count = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local apps_waiting = KEYS[#KEYS]
local rooms, opened, ids, out = {}, {}, {}, {}
for n = 0, count - 1 do
  local a = 5 + n * ${FIELDS}
  local kind = ARGV[a]
  local id = false
  if kind == 'k' or kind == 'r' then
    local base = tonumber(ARGV[a + 1])
    local room = rooms[base]
    if not room then
      room = open_room(room_keys(base), gen, epoch .. '.' .. base, now)
      rooms[base] = room
      opened[#opened + 1] = room
    end
    if kind == 'k' then
      local from = false
      if ARGV[a + 10] == '1' then from = ARGV[a + 9] end
      id = append(room, now, tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]), ARGV[a + 6], ARGV[a + 5], from)
    else
      id = skip(room, now)
    end
    local waiting = tonumber(ARGV[a + 13])
    if waiting > 0 then
      redis.call('rpush', KEYS[waiting], ARGV[a + 11] .. id .. ARGV[a + 12])
      redis.call('sadd', apps_waiting, ARGV[a + 14])
    end
    out[#out + 1] = {ARGV[a + 2], ARGV[a + 3] .. id .. ARGV[a + 4] .. '\\n' .. ARGV[a + 5]}
  else
    out[#out + 1] = {ARGV[a + 2], ARGV[a + 3] .. '\\n' .. ARGV[a + 5]}
  end
  ids[n + 1] = id
end
for _, room in ipairs(opened) do save_room(room) end
for _, message in ipairs(out) do redis.call('publish', message[1], message[2]) end
return ids`;

/** The data as sent: the bytes when the emitter already has them (large data, encoded once). */
const dataOf = (event: OutgoingRoomEvent): string | Buffer => event.dataBytes ?? event.data;

/**
 * The one step that orders a room: each publish is one script that gives ids, stores what is kept
 * (history, webhook reports) and publishes, so every subscriber on every node sees a room's ids
 * strictly rising.
 */
export class RedisPublisher {
  readonly #client: RedisClient;
  readonly #publish: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#publish = client.script('rtPublish', PUBLISH_LUA);
  }

  publish(events: readonly Outgoing[], nowMs: number): Promise<(string | undefined)[]> {
    if (events.length === 0) return Promise.resolve([]);
    let args: RedisArg[];
    let keys: string[];
    try {
      [keys, args] = this.#arguments(events, nowMs);
    } catch (error) {
      return Promise.reject(toStoreError(error));
    }
    // Sent now, in call order: one connection keeps the order of one publisher.
    return this.#publish(keys, args).then((reply) => {
      const ids = Array.isArray(reply) ? reply : [];
      return events.map((_, i) => (typeof ids[i] === 'string' ? (ids[i] as string) : undefined));
    });
  }

  #arguments(events: readonly Outgoing[], nowMs: number): [string[], RedisArg[]] {
    const prefix = this.#client.prefix;
    const keys: string[] = [];
    const roomBase = new Map<string, number>();
    const waitingIndex = new Map<string, number>();
    const args: RedisArg[] = [this.#client.generation, this.#client.newEpoch(), Math.floor(nowMs), events.length];
    for (const event of events) {
      const channel = prefix + topicOf(event);
      if (event.kind !== 'room' || event.presence) {
        const { head, body } = encodePublication(event);
        args.push(event.kind === 'room' ? 'p' : 'u', 0, channel, head, '', body, '', 0, 0, '', '0', '', '', 0, '');
        continue;
      }
      const from = event.from ?? '';
      const hasFrom = event.from === undefined ? '0' : '1';
      const roomKey = `${event.app}\u0000${event.room}`;
      let base = roomBase.get(roomKey);
      if (base === undefined) {
        base = keys.length + 1;
        keys.push(...roomKeys(prefix, event.app, event.room));
        roomBase.set(roomKey, base);
      }
      let waiting = 0;
      if (event.report) {
        waiting = waitingIndex.get(event.app) ?? 0;
        if (waiting === 0) {
          keys.push(waitingKey(prefix, event.app));
          waiting = keys.length;
          waitingIndex.set(event.app, waiting);
        }
      }
      const { head, tail } = encodePublication(event);
      const [limit, hours] = event.keep ?? [0, 0];
      args.push(
        event.keep ? 'k' : 'r',
        base,
        channel,
        head,
        tail,
        dataOf(event),
        event.event,
        limit,
        Math.round(hours * 3_600_000),
        from,
        hasFrom,
        event.report?.before ?? '',
        event.report?.after ?? '',
        waiting,
        event.app,
      );
    }
    // Last, always: the set of apps with reports waiting (the script finds it as KEYS[#KEYS]).
    keys.push(waitingAppsKey(prefix));
    return [keys, args];
  }
}
