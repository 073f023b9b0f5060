import type { Redis } from 'ioredis';
import type { PublicationHandler, Unsubscribe } from '../types.js';
import { type RedisClient, toStoreError } from './client.js';
import { decodePublication } from './publication-codec.js';

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
 * A node's side of fan-out on one Redis: one subscriber connection, local subscriptions to one topic
 * sharing one Redis subscription, and a signal when the connection came back (what was published
 * meanwhile was not heard).
 */
export class RedisSubscriber {
  readonly #client: RedisClient;
  readonly #subscriber: Redis;
  readonly #connected: Promise<void>;
  readonly #topics = new Map<string, Topic>();
  readonly #resubscribed = new Set<() => void>();
  #connectedBefore = false;
  #closed = false;

  constructor(client: RedisClient) {
    this.#client = client;
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
