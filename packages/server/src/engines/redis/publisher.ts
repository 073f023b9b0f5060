import { PublishIncomplete } from '../publish-incomplete.js';
import { StoreError } from '../store-error.js';
import type { Outgoing, OutgoingRoomEvent } from '../types.js';
import { topicOf } from '../types.js';
import { type RedisArg, type RedisClient, type Script, toStoreError } from './client.js';
import { reportKey, roomKeys } from './keys.js';
import { encodePublication } from './publication-codec.js';
import { ReportIndex } from './report-index.js';
import { ROOM_LUA } from './room-lua.js';

/** Arguments per event in the room script (after gen, epoch, now, count, channel). */
const FIELDS = 11;

/**
 * One room's events of one Broker.publish, in order, in the room's slot. KEYS: the room's four keys,
 * its reports list, and on a cluster its channel. ARGV: gen, epoch, now, count, the channel on one
 * Redis ('' on a cluster: KEYS[6], SPUBLISH), then per event (FIELDS from 6 + n * FIELDS): kind
 * (k: kept, r: not kept, p: presence change), header head (the whole header for p; see
 * publication-codec.ts), header tail, data, event, limit, hours in ms, from, has-from, report
 * before ('' for none), report after.
 * Everything is stored first, then everything is published, so a failure stores nothing and
 * publishes nothing (Redis refuses a script for lack of memory at its first write, before any).
 * Answers {1 when the reports list went from empty to not else 0, then each event's id, nil for p}.
 */
const ROOM_PUBLISH_LUA = `${ROOM_LUA}
local gen, epoch, now, count = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local room = open_room(room_keys(1), gen, epoch, now)
local answer, out = {0}, {}
for n = 0, count - 1 do
  local a = 6 + n * ${FIELDS}
  local kind = ARGV[a]
  if kind == 'p' then
    out[#out + 1] = ARGV[a + 1] .. '\\n' .. ARGV[a + 3]
    answer[n + 2] = false
  else
    local id
    if kind == 'k' then
      local from = false
      if ARGV[a + 8] == '1' then from = ARGV[a + 7] end
      id = append(room, now, tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]), ARGV[a + 4], ARGV[a + 3], from)
    else
      id = skip(room, now)
    end
    if ARGV[a + 9] ~= '' and redis.call('rpush', KEYS[5], ARGV[a + 9] .. id .. ARGV[a + 10]) == 1 then
      answer[1] = 1
    end
    out[#out + 1] = ARGV[a + 1] .. id .. ARGV[a + 2] .. '\\n' .. ARGV[a + 3]
    answer[n + 2] = id
  end
end
save_room(room)
if ARGV[5] == '' then
  for _, message in ipairs(out) do redis.call('spublish', KEYS[6], message) end
else
  for _, message in ipairs(out) do redis.call('publish', ARGV[5], message) end
end
return answer`;

/**
 * How long a room's index entry this node wrote counts as there: its page sends then skip the index
 * step before their script, so a busy room touches the index about once a second, not per send. A
 * batcher that dropped the entry meanwhile (the list was empty) finds it again from the step after
 * the script (the list went from empty to not).
 */
const INDEXED_FOR_MS = 1000;
const MAX_INDEXED = 10_000;

/** The data as sent: the bytes when the emitter already has them (large data, encoded once). */
const dataOf = (event: OutgoingRoomEvent): string | Buffer => event.dataBytes ?? event.data;

/** One step of a publish: a room's script, or one publication sent as it is. */
type Step =
  | { kind: 'room'; app: string; room: string; at: number[]; events: OutgoingRoomEvent[]; reports: boolean }
  | { kind: 'plain'; at: number; event: Outgoing };

/**
 * The one step that orders a room: each room's events of a publish are one script in the room's
 * slot that gives ids, stores what is kept (history, webhook reports) and publishes, so every
 * subscriber on every node sees a room's ids strictly rising. Rooms of one publish are separate
 * steps (their slots may be on different shards), sent at once; publications that store nothing
 * (users, nodes, every node, a room's presence changes alone) are sent as they are, after the rooms
 * of their publish when it has any (none taken: none sent). Steps to one channel keep this
 * publisher's order: one connection per shard, and a step that must wait holds the later ones.
 */
export class RedisPublisher {
  readonly #client: RedisClient;
  readonly #publish: Script;
  readonly #index: ReportIndex;
  /** Topics whose step waits its turn (see #step): resolved once that step was sent. */
  readonly #sending = new Map<string, Promise<void>>();
  /** Rooms whose report index entry this node wrote, and when (bounded: cleared when full). */
  readonly #indexed = new Map<string, number>();

  constructor(client: RedisClient) {
    this.#client = client;
    this.#publish = client.script('rtPublishRoom', ROOM_PUBLISH_LUA);
    this.#index = new ReportIndex(client);
  }

  /**
   * Answers each event's id once every step is done; when some steps failed, rejects with
   * PublishIncomplete (the ids of the steps that took it, and which events did not), or with a
   * plain StoreError when none took it.
   */
  async publish(events: readonly Outgoing[], nowMs: number): Promise<(string | undefined)[]> {
    if (events.length === 0) return [];
    const ids: (string | undefined)[] = events.map(() => undefined);
    let steps: Step[];
    try {
      steps = stepsOf(events);
    } catch (error) {
      throw toStoreError(error);
    }
    // Rooms' steps sent now, in call order: one connection per shard keeps the order of one publisher.
    const running = new Map<Step, Promise<void>>();
    for (const step of steps) if (step.kind === 'room') running.set(step, this.#step(step, nowMs, ids));
    // Publications that store nothing go once some room took its events (at once when there are
    // none): a publish the store refuses altogether delivers nothing, as on one script.
    const gate =
      running.size === 0 || running.size === steps.length
        ? undefined
        : Promise.allSettled(running.values()).then((results) => {
            if (results.some((result) => result.status === 'fulfilled')) return undefined;
            const first = results[0];
            return first?.status === 'rejected' ? toStoreError(first.reason) : new StoreError('unavailable');
          });
    for (const step of steps) if (step.kind === 'plain') running.set(step, this.#step(step, nowMs, ids, gate));
    const done = await Promise.allSettled(steps.map((step) => running.get(step) as Promise<void>));
    const failed: number[] = [];
    let cause: unknown;
    let full = false;
    done.forEach((result, i) => {
      if (result.status === 'fulfilled') return;
      const step = steps[i] as Step;
      const error = toStoreError(result.reason);
      cause ??= error;
      if (error.kind === 'full') full = true;
      if (step.kind === 'room') failed.push(...step.at);
      else failed.push(step.at);
    });
    if (failed.length === 0) return ids;
    if (failed.length === events.length) throw cause instanceof StoreError ? cause : toStoreError(cause);
    failed.sort((a, b) => a - b);
    throw new PublishIncomplete(full ? 'full' : 'unavailable', ids, failed, { cause });
  }

  /**
   * Sends one step now, or, when it must wait (for its index step, for the rooms of its publish:
   * `gate` answers the error to fail with when none took its events), in its turn: this publisher's
   * later steps to the same topic wait for it to be sent.
   */
  async #step(step: Step, nowMs: number, ids: (string | undefined)[], gate?: Promise<unknown>): Promise<void> {
    const key = topicOf(step.kind === 'room' ? (step.events[0] as OutgoingRoomEvent) : step.event);
    const before = this.#sending.get(key);
    const indexFirst = step.kind === 'room' && step.reports && !this.#recentlyIndexed(step.app, step.room);
    // The fast path: sent now, in call order (one connection per shard keeps a publisher's order).
    if (before === undefined && gate === undefined && !indexFirst) {
      await this.#send(step, nowMs, ids);
      return;
    }
    let sent = (): void => {};
    const turn = new Promise<void>((resolve) => {
      sent = resolve;
    });
    this.#sending.set(key, turn);
    let done: Promise<void>;
    try {
      if (before) await before;
      // The index first, so a reader that sees the event finds its report (see report-index.ts);
      // skipped when this node wrote the room's entry within the last second (a busy room).
      if (step.kind === 'room' && step.reports && !this.#recentlyIndexed(step.app, step.room)) {
        await this.#index.add(step.app, step.room);
        this.#indexedNow(step.app, step.room);
      }
      const refused = gate === undefined ? undefined : await gate;
      if (refused !== undefined) throw refused;
      done = this.#send(step, nowMs, ids);
    } finally {
      sent();
      if (this.#sending.get(key) === turn) this.#sending.delete(key);
    }
    await done;
  }

  #recentlyIndexed(app: string, room: string): boolean {
    const at = this.#indexed.get(`${app}\u0000${room}`);
    return at !== undefined && Date.now() - at < INDEXED_FOR_MS;
  }

  #indexedNow(app: string, room: string): void {
    if (this.#indexed.size >= MAX_INDEXED) this.#indexed.clear();
    this.#indexed.set(`${app}\u0000${room}`, Date.now());
  }

  /** Sends one step now; answers once it is done. */
  async #send(step: Step, nowMs: number, ids: (string | undefined)[]): Promise<void> {
    if (step.kind === 'plain') {
      await this.#plain(step.event);
      return;
    }
    const [keys, args] = this.#arguments(step, nowMs);
    const reply = await this.#publish(keys, args);
    const answer = Array.isArray(reply) ? reply : [];
    step.at.forEach((at, n) => {
      const id = answer[n + 1];
      ids[at] = typeof id === 'string' ? id : undefined;
    });
    // The list went from empty to not: a batcher may have dropped the entry since the first step.
    if (answer[0] === 1) {
      await this.#index.add(step.app, step.room);
      this.#indexedNow(step.app, step.room);
    }
    // A page send is acknowledged once its report is on a replica too (on a cluster with replicas),
    // so a failover right after still delivers its webhook event. Not acknowledged in time (no
    // replica answering), it is acknowledged anyway: telling the page to send again would repeat it.
    if (step.reports) await this.#client.replicated(keys[0] as string);
  }

  #plain(event: Outgoing): Promise<unknown> {
    const channel = this.#client.prefix + topicOf(event);
    const { head, body } = encodePublication(event);
    const data = event.kind === 'room' ? dataOf(event) : body;
    const message = typeof data === 'string' ? `${head}\n${data}` : Buffer.concat([Buffer.from(`${head}\n`), data]);
    return this.#client.cluster
      ? this.#client.call((redis) => redis.spublish(channel, message))
      : this.#client.call((redis) => redis.publish(channel, message));
  }

  #arguments(step: Extract<Step, { kind: 'room' }>, nowMs: number): [string[], RedisArg[]] {
    const prefix = this.#client.prefix;
    const cluster = this.#client.cluster;
    const first = step.events[0] as OutgoingRoomEvent;
    const channel = prefix + topicOf(first);
    const keys: string[] = [...roomKeys(prefix, step.app, step.room), reportKey(prefix, step.app, step.room)];
    if (cluster) keys.push(channel);
    const args: RedisArg[] = [
      this.#client.generation,
      this.#client.newEpoch(),
      Math.floor(nowMs),
      step.events.length,
      cluster ? '' : channel,
    ];
    for (const event of step.events) {
      const { head, tail } = encodePublication(event);
      if (event.presence) {
        args.push('p', head, '', dataOf(event), '', 0, 0, '', '0', '', '');
        continue;
      }
      const [limit, hours] = event.keep ?? [0, 0];
      args.push(
        event.keep ? 'k' : 'r',
        head,
        tail,
        dataOf(event),
        event.event,
        limit,
        Math.round(hours * 3_600_000),
        event.from ?? '',
        event.from === undefined ? '0' : '1',
        event.report?.before ?? '',
        event.report?.after ?? '',
      );
    }
    return [keys, args];
  }
}

/**
 * The steps of a publish: a script per room with an event that gets an id (its presence changes go
 * with it, in order), every other publication alone.
 */
function stepsOf(events: readonly Outgoing[]): Step[] {
  const keyOf = (event: OutgoingRoomEvent): string => `${event.app}\u0000${event.room}`;
  const withIds = new Set<string>();
  for (const event of events) if (event.kind === 'room' && !event.presence) withIds.add(keyOf(event));
  const rooms = new Map<string, Extract<Step, { kind: 'room' }>>();
  const steps: Step[] = [];
  for (const [at, event] of events.entries()) {
    if (event.kind !== 'room' || !withIds.has(keyOf(event))) {
      steps.push({ kind: 'plain', at, event });
      continue;
    }
    let step = rooms.get(keyOf(event));
    if (!step) {
      step = { kind: 'room', app: event.app, room: event.room, at: [], events: [], reports: false };
      rooms.set(keyOf(event), step);
      steps.push(step);
    }
    step.at.push(at);
    step.events.push(event);
    if (event.report) step.reports = true;
  }
  return steps;
}
