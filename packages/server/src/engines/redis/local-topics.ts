/**
 * A node's local subscriptions by topic, shared by both Redis subscribers (one Redis, a cluster):
 * local subscriptions to one topic share one Redis subscription, opened with the first and ended
 * with the last; each local one ends alone, at once, and may end itself while handling.
 */
import type { Publication, PublicationHandler, Unsubscribe } from '../types.js';
import { toStoreError } from './client.js';

interface Subscription {
  handler: PublicationHandler;
  active: boolean;
}

interface Topic {
  subscriptions: Set<Subscription>;
  /** Settles when Redis confirmed the subscription (or refused it). */
  confirmed: Promise<void>;
}

export interface RedisSubscribing {
  /** Subscribes the topic in Redis (its first local subscription). */
  open(topic: string): Promise<void>;
  /** Ends the topic's Redis subscription (its last local subscription ended); never rejects. */
  close(topic: string): Promise<void>;
}

export class LocalTopics {
  readonly #redis: RedisSubscribing;
  readonly #topics = new Map<string, Topic>();

  constructor(redis: RedisSubscribing) {
    this.#redis = redis;
  }

  async subscribe(topic: string, handler: PublicationHandler): Promise<Unsubscribe> {
    const subscription: Subscription = { handler, active: true };
    let entry = this.#topics.get(topic);
    if (!entry) {
      const created: Topic = { subscriptions: new Set(), confirmed: this.#redis.open(topic) };
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

  has(topic: string): boolean {
    return this.#topics.has(topic);
  }

  topics(): string[] {
    return [...this.#topics.keys()];
  }

  /** Hands the publication to every active subscription of the topic; a failing handler stops no other. */
  deliver(topic: string, publication: Publication): void {
    const entry = this.#topics.get(topic);
    if (!entry) return;
    for (const subscription of [...entry.subscriptions]) {
      if (!subscription.active) continue;
      try {
        subscription.handler(publication);
      } catch {
        // One failing handler does not keep the publication from the others.
      }
    }
  }

  /** Forgets every topic (the subscriber closes): nothing more is delivered. */
  clear(): void {
    this.#topics.clear();
  }

  #unsubscribe(topic: string, entry: Topic, subscription: Subscription): Promise<void> {
    if (!subscription.active) return Promise.resolve();
    subscription.active = false;
    entry.subscriptions.delete(subscription);
    if (entry.subscriptions.size > 0 || this.#topics.get(topic) !== entry) return Promise.resolve();
    this.#topics.delete(topic);
    return this.#redis.close(topic);
  }
}
