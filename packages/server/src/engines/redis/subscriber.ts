import type { Redis } from 'ioredis';
import type { PublicationHandler, Unsubscribe } from '../types.js';
import { type RedisClient, toStoreError } from './client.js';
import { LocalTopics } from './local-topics.js';
import { decodePublication } from './publication-codec.js';

/**
 * A node's side of fan-out on one Redis: one subscriber connection, local subscriptions to one topic
 * sharing one Redis subscription (LocalTopics), and a signal when the connection came back (what was
 * published meanwhile was not heard).
 */
export class RedisSubscriber {
  readonly #client: RedisClient;
  readonly #subscriber: Redis;
  readonly #connected: Promise<void>;
  readonly #topics: LocalTopics;
  readonly #resubscribed = new Set<() => void>();
  #connectedBefore = false;
  #closed = false;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#subscriber = client.duplicate();
    this.#topics = new LocalTopics({
      open: async (topic) => {
        await this.#connected;
        await this.#subscriber.subscribe(client.prefix + topic);
      },
      close: (topic) =>
        this.#closed
          ? Promise.resolve()
          : this.#subscriber.unsubscribe(client.prefix + topic).then(
              () => {},
              () => {
                // Disconnected: nothing to end; a resubscribed channel with no topic is ignored.
              },
            ),
    });
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
    return this.#topics.subscribe(topic, handler);
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
    const channels = this.#topics.topics().map((topic) => this.#client.prefix + topic);
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

  #deliver(channel: string, message: string): void {
    if (!channel.startsWith(this.#client.prefix)) return;
    const topic = channel.slice(this.#client.prefix.length);
    if (!this.#topics.has(topic)) return;
    const publication = decodePublication(message);
    if (publication) this.#topics.deliver(topic, publication);
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
