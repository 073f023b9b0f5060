import type { Redis } from 'ioredis';
import type { Broker, Outgoing, OutgoingRoomEvent, PublicationHandler, Unsubscribe } from '../types.js';
import { topicOf } from '../types.js';
import { type RedisArg, type RedisClient, type Script, toStoreError } from './client.js';
import { roomKeys, waitingAppsKey, waitingKey } from './keys.js';
import { decodePublication, encodePublication } from './publication-codec.js';
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

interface Subscription {
  handler: PublicationHandler;
  active: boolean;
}

interface Topic {
  subscriptions: Set<Subscription>;
  /** Settles when Redis confirmed the SUBSCRIBE (or refused it). */
  confirmed: Promise<void>;
}

/**
 * Fan-out between nodes through Redis pub/sub, and the one step that orders a room: each publish is
 * one script that gives ids, stores what is kept (history, webhook reports) and publishes, so every
 * subscriber on every node sees a room's ids strictly rising. One subscriber connection per node;
 * local subscriptions to one topic share one Redis subscription.
 */
export class RedisBroker implements Broker {
  readonly #client: RedisClient;
  readonly #publish: Script;
  readonly #subscriber: Redis;
  readonly #connected: Promise<void>;
  readonly #topics = new Map<string, Topic>();
  readonly #resubscribed = new Set<() => void>();
  #connectedBefore = false;
  #closed = false;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#publish = client.script('rtPublish', PUBLISH_LUA);
    this.#subscriber = client.duplicate();
    // ioredis subscribes again to every channel after a reconnect (autoResubscribe).
    this.#subscriber.on('message', (channel: string, message: string) => this.#deliver(channel, message));
    this.#subscriber.on('ready', () => {
      if (this.#connectedBefore) void this.#subscribeAgain();
      this.#connectedBefore = true;
    });
    this.#connected = this.#subscriber.connect().then(
      () => {},
      () => {
        // Retried by the retry strategy; subscribe fails while it is down.
      },
    );
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

  async subscribe(topic: string, handler: PublicationHandler): Promise<Unsubscribe> {
    if (this.#closed) throw toStoreError(new Error('the broker is closed'));
    const subscription: Subscription = { handler, active: true };
    let entry = this.#topics.get(topic);
    if (!entry) {
      const channel = this.#client.prefix + topic;
      const created: Topic = {
        subscriptions: new Set(),
        confirmed: this.#connected.then(() => this.#subscriber.subscribe(channel)).then(() => {}),
      };
      created.confirmed.catch(() => {
        // A refused subscription is forgotten, so the next subscribe asks Redis again.
        if (this.#topics.get(topic) === created) this.#topics.delete(topic);
      });
      this.#topics.set(topic, created);
      entry = created;
    }
    const topicEntry = entry;
    topicEntry.subscriptions.add(subscription);
    try {
      await topicEntry.confirmed;
    } catch (error) {
      subscription.active = false;
      topicEntry.subscriptions.delete(subscription);
      throw toStoreError(error);
    }
    return () => this.#unsubscribe(topic, topicEntry, subscription);
  }

  /**
   * Calls `listener` each time the subscriber connection came back after a drop and every topic is
   * subscribed again. Publications made while it was down were not received: pages of the node's
   * rooms should resume from history (their ids tell what they missed). Answers a function that
   * removes the listener.
   */
  onResubscribed(listener: () => void): () => void {
    this.#resubscribed.add(listener);
    return () => this.#resubscribed.delete(listener);
  }

  async #subscribeAgain(): Promise<void> {
    // ioredis subscribes again by itself; asking once more (harmless) tells us when it is confirmed.
    const channels = [...this.#topics.keys()].map((topic) => this.#client.prefix + topic);
    try {
      if (channels.length > 0) await this.#subscriber.subscribe(...channels);
    } catch {
      return; // Dropped again: the next ready event tries again.
    }
    for (const listener of [...this.#resubscribed]) {
      try {
        listener();
      } catch {
        // A failing listener does not keep the others from hearing.
      }
    }
  }

  /** Ends one subscription at once (no more deliveries); the last one of a topic ends the Redis subscription. */
  #unsubscribe(topic: string, entry: Topic, subscription: Subscription): Promise<void> {
    if (!subscription.active) return Promise.resolve();
    subscription.active = false;
    entry.subscriptions.delete(subscription);
    if (entry.subscriptions.size > 0 || this.#topics.get(topic) !== entry) return Promise.resolve();
    this.#topics.delete(topic);
    if (this.#closed) return Promise.resolve();
    return this.#subscriber.unsubscribe(this.#client.prefix + topic).then(
      () => {},
      () => {
        // Disconnected: nothing to end; a resubscribed channel with no topic is ignored.
      },
    );
  }

  #deliver(channel: string, message: string): void {
    const entry = this.#topics.get(channel.slice(this.#client.prefix.length));
    if (!entry || !channel.startsWith(this.#client.prefix)) return;
    const publication = decodePublication(message);
    if (!publication) return;
    for (const subscription of [...entry.subscriptions]) {
      // A handler may end its own or another subscription while handling.
      if (!subscription.active) continue;
      try {
        subscription.handler(publication);
      } catch {
        // One failing handler does not keep the publication from the others.
      }
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#topics.clear();
    try {
      await this.#subscriber.quit();
    } catch {
      this.#subscriber.disconnect();
    }
  }
}
