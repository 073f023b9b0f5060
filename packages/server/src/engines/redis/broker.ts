import type { Broker, Outgoing, PublicationHandler, Unsubscribe } from '../types.js';
import type { RedisClient } from './client.js';
import { RedisPublisher } from './publisher.js';
import { RedisShardedSubscriber } from './sharded-subscriber.js';
import { RedisSubscriber } from './subscriber.js';

/**
 * Fan-out between nodes through Redis pub/sub: the publisher orders and stores, the subscriber (one
 * connection per node; local subscriptions to one topic share one Redis subscription) hears.
 */
export class RedisBroker implements Broker {
  readonly #publisher: RedisPublisher;
  readonly #subscriber: RedisSubscriber | RedisShardedSubscriber;

  constructor(client: RedisClient) {
    this.#publisher = new RedisPublisher(client);
    // On a cluster, sharded pub/sub: classic SUBSCRIBE would hear every shard's PUBLISH (broadcast to all).
    this.#subscriber = client.cluster ? new RedisShardedSubscriber(client) : new RedisSubscriber(client);
  }

  publish(events: readonly Outgoing[], nowMs: number): Promise<(string | undefined)[]> {
    return this.#publisher.publish(events, nowMs);
  }

  subscribe(topic: string, handler: PublicationHandler): Promise<Unsubscribe> {
    return this.#subscriber.subscribe(topic, handler);
  }

  /** See RedisSubscriber.onResubscribed (one Redis: every topic) and RedisShardedSubscriber's (the topics of a shard). */
  onResubscribed(listener: (topics?: readonly string[]) => void): () => void {
    return this.#subscriber.onResubscribed(listener);
  }

  onGap(listener: (topics?: readonly string[]) => void): () => void {
    return this.#subscriber.onResubscribed(listener);
  }

  close(): Promise<void> {
    return this.#subscriber.close();
  }
}
