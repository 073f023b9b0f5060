/**
 * A node's side of fan-out on a Redis Cluster: sharded pub/sub (SSUBSCRIBE), one subscriber
 * connection per shard, through @redis/client: the one client that kept a sharded subscriber hearing
 * through a primary failover and a slot move without being recreated (docs/scaling.md, "Redis
 * Cluster: client and what Redis 7.0 allows"). Commands stay on ioredis (client.ts).
 *
 * Loss is told per shard: when the connection to a shard drops, or a slot moves to another primary
 * (a reshard: publications made on the new owner before the subscription followed were not heard),
 * the topics it carried are named to the gap listeners once they are heard again, so only the pages
 * of those rooms and users resume.
 */

import { createCluster } from '@redis/client';
import calculateSlot from 'cluster-key-slot';
import type { PublicationHandler, Unsubscribe } from '../types.js';
import { type RedisClient, toStoreError } from './client.js';
import { LocalTopics } from './local-topics.js';
import { decodePublication } from './publication-codec.js';

/** The topics of one slot, and the primary (`host:port`) they were last heard through. */
interface Slot {
  topics: Set<string>;
  address: string | undefined;
}

/** How often topics cut off by a dropped shard are checked for being heard again. */
const HEAL_CHECK_MS = 200;
/** How often the slots with topics are checked for having moved to another primary. */
const MOVE_CHECK_MS = 500;
/** How long an unsubscribe, or a stop, waits for a shard to answer before going on without it. */
const CLOSE_WAIT_MS = 1000;

type ClusterClient = ReturnType<typeof createCluster>;

export class RedisShardedSubscriber {
  readonly #prefix: string;
  readonly #cluster: ClusterClient;
  readonly #connected: Promise<void>;
  readonly #topics: LocalTopics;
  /** The slot of each topic subscribed in Redis. */
  readonly #slotOf = new Map<string, number>();
  readonly #slots = new Map<number, Slot>();
  readonly #gapped = new Set<string>();
  /** The shards' subscriber connections already watched for moved slots. */
  readonly #watched = new WeakSet<object>();
  readonly #listeners = new Set<(topics: readonly string[]) => void>();
  #healTimer: NodeJS.Timeout | undefined;
  /** Topics found heard again are being subscribed on their owner before they are told. */
  #healing = false;
  readonly #moveTimer: NodeJS.Timeout;
  #closed = false;

  constructor(client: RedisClient, commandTimeoutMs = 2000) {
    this.#prefix = client.prefix;
    this.#cluster = createCluster({
      rootNodes: client.seeds.map((url) => ({ url })),
      defaults: {
        socket: {
          connectTimeout: Math.max(commandTimeoutMs, 1000),
          reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 10), 1000),
        },
      },
    });
    this.#topics = new LocalTopics({ open: (topic) => this.#open(topic), close: (topic) => this.#close(topic) });
    this.#cluster.on('error', () => {});
    this.#cluster.on('node-error', () => {});
    const dropped = (info: { host?: string; port?: number }) => this.#dropped(`${info.host}:${info.port}`);
    this.#cluster.on('node-reconnecting', dropped);
    this.#cluster.on('node-disconnect', dropped);
    this.#moveTimer = setInterval(() => this.#checkMoved(), MOVE_CHECK_MS);
    this.#moveTimer.unref();
    this.#connected = this.#cluster.connect().then(
      () => {},
      () => {
        // Not reached at start: subscribe fails until it is.
      },
    );
  }

  async subscribe(topic: string, handler: PublicationHandler): Promise<Unsubscribe> {
    if (this.#closed) throw toStoreError(new Error('the broker is closed'));
    return this.#topics.subscribe(topic, handler);
  }

  /**
   * Calls `listener` with the topics a dropped shard carried, once they are heard again: what was
   * published to them meanwhile was not received. Answers a function that removes the listener.
   */
  onResubscribed(listener: (topics: readonly string[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#healTimer) clearInterval(this.#healTimer);
    clearInterval(this.#moveTimer);
    this.#topics.clear();
    this.#slots.clear();
    // A graceful close waits for every shard to answer; one that is down would hold it forever.
    const closed = await Promise.race([
      this.#cluster.close().then(
        () => true,
        () => false,
      ),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), CLOSE_WAIT_MS).unref()),
    ]);
    if (!closed) this.#cluster.destroy();
  }

  /** The topic's first local subscription: SSUBSCRIBE on its shard, and its slot watched. */
  async #open(topic: string): Promise<void> {
    const channel = this.#prefix + topic;
    const slot = calculateSlot(channel);
    await this.#connected;
    await this.#cluster.sSubscribe(channel, this.#hear);
    this.#watchShard(slot);
    if (!this.#topics.has(topic)) return;
    this.#slotOf.set(topic, slot);
    let entry = this.#slots.get(slot);
    if (!entry) {
      entry = { topics: new Set(), address: this.#addressOf(slot) };
      this.#slots.set(slot, entry);
    }
    entry.topics.add(topic);
  }

  /** Its last one ended: SUNSUBSCRIBE, and forgotten. */
  #close(topic: string): Promise<void> {
    this.#gapped.delete(topic);
    const slot = this.#slotOf.get(topic);
    this.#slotOf.delete(topic);
    const entry = slot === undefined ? undefined : this.#slots.get(slot);
    entry?.topics.delete(topic);
    if (slot !== undefined && entry?.topics.size === 0) this.#slots.delete(slot);
    if (this.#closed) return Promise.resolve();
    const ended = this.#cluster.sUnsubscribe(this.#prefix + topic, this.#hear).then(
      () => {},
      () => {
        // Disconnected: nothing to end.
      },
    );
    // Waited for at most a moment: a shard that is down would hold it until it answers (a stop
    // would hang), and #hear ignores the topic from now on anyway.
    return Promise.race([ended, new Promise<void>((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
  }

  readonly #hear = (message: string, channel: string): void => {
    if (!channel.startsWith(this.#prefix)) return;
    const topic = channel.slice(this.#prefix.length);
    // Cut off and not told yet: a page handed a later event now would resume after the ones missed,
    // never getting them. Its pages resume from history once the gap is told.
    if (!this.#topics.has(topic) || this.#gapped.has(topic)) return;
    const publication = decodePublication(message);
    if (publication) this.#topics.deliver(topic, publication);
  };

  /**
   * A slot moved away (a reshard) is told by its shard's subscriber connection (Redis unsubscribes its
   * channels): the topic is cut off at once, before the library subscribes it on the new owner and
   * that owner's publications arrive, which the move check alone (every MOVE_CHECK_MS) could let by.
   */
  #watchShard(slot: number): void {
    let client: { on(event: string, listener: (channel: string) => void): unknown } | undefined;
    try {
      client = this.#cluster.getSlotMaster(slot).pubSub?.client as typeof client;
    } catch {
      return;
    }
    if (!client || this.#watched.has(client)) return;
    this.#watched.add(client);
    client.on('sharded-channel-moved', (channel: string) => {
      if (!channel.startsWith(this.#prefix)) return;
      const slot = this.#slotOf.get(channel.slice(this.#prefix.length));
      const moved = slot === undefined ? undefined : this.#slots.get(slot);
      if (moved) this.#gap(moved);
    });
  }

  #addressOf(slot: number): string | undefined {
    try {
      return this.#cluster.getSlotMaster(slot).address;
    } catch {
      return undefined;
    }
  }

  #dropped(address: string): void {
    if (this.#closed) return;
    for (const slot of this.#slots.values()) if (slot.address === address) this.#gap(slot);
  }

  /** Slots whose primary changed without a drop seen (a reshard moved them) cut their topics off too. */
  #checkMoved(): void {
    if (this.#closed || !this.#cluster.isReady) return;
    for (const [number, slot] of this.#slots) {
      const now = this.#addressOf(number);
      if (now !== undefined && slot.address !== undefined && now !== slot.address) this.#gap(slot);
    }
  }

  #gap(slot: Slot): void {
    slot.address = undefined;
    for (const topic of slot.topics) this.#gapped.add(topic);
    if (this.#gapped.size > 0 && !this.#healTimer) {
      this.#healTimer = setInterval(() => this.#checkHealed(), HEAL_CHECK_MS);
      this.#healTimer.unref();
    }
  }

  /** Topics whose shard has a ready subscriber connection again are told to the listeners. */
  #checkHealed(): void {
    if (this.#healing || this.#closed) return;
    const healed: Array<{ topic: string; slot: number }> = [];
    for (const topic of this.#gapped) {
      const slot = this.#slotOf.get(topic);
      if (slot === undefined || !this.#topics.has(topic)) {
        this.#gapped.delete(topic);
        continue;
      }
      try {
        const primary = this.#cluster.getSlotMaster(slot);
        if (this.#cluster.isReady && primary.pubSub?.client?.isReady === true) healed.push({ topic, slot });
      } catch {
        // No owner known yet: checked again.
      }
    }
    if (healed.length === 0) return;
    this.#healing = true;
    // Subscribed on the owner now (again, harmless: listeners are a set), then heard and told, so a
    // page that resumes at once hears what comes after what history gives it.
    const again = healed.map(({ topic }) => this.#cluster.sSubscribe(this.#prefix + topic, this.#hear));
    void Promise.allSettled(again).then((results) => {
      this.#healing = false;
      const told: string[] = [];
      results.forEach((result, i) => {
        const { topic, slot } = healed[i] as { topic: string; slot: number };
        if (result.status !== 'fulfilled' || this.#slotOf.get(topic) !== slot) return;
        const entry = this.#slots.get(slot);
        if (entry) entry.address = this.#addressOf(slot);
        this.#watchShard(slot);
        this.#gapped.delete(topic);
        told.push(topic);
      });
      if (this.#gapped.size === 0 && this.#healTimer) {
        clearInterval(this.#healTimer);
        this.#healTimer = undefined;
      }
      if (told.length === 0 || this.#closed) return;
      for (const listener of [...this.#listeners]) {
        try {
          listener(told);
        } catch {
          // A failing listener does not keep the others from hearing.
        }
      }
    });
  }
}
