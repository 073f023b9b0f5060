import { type Publication, type PublicationHandler, topicOf } from '../types.js';

/**
 * In-process fan-out: `publish` calls the topic's handlers inline, in subscription order.
 * Each subscribe is its own subscription (the same handler twice is called twice), and its stop
 * function ends that one only, however often it is called. The embedded broker delivers through it.
 */
export class MemoryFanout {
  readonly #topics = new Map<string, Set<{ handler: PublicationHandler }>>();

  publish(publication: Publication): void {
    const subscriptions = this.#topics.get(topicOf(publication));
    if (!subscriptions) return;
    for (const subscription of subscriptions) subscription.handler(publication);
  }

  subscribe(topic: string, handler: PublicationHandler): () => void {
    let subscriptions = this.#topics.get(topic);
    if (!subscriptions) {
      subscriptions = new Set();
      this.#topics.set(topic, subscriptions);
    }
    const subscription = { handler };
    subscriptions.add(subscription);
    return () => {
      const set = this.#topics.get(topic);
      if (!set?.delete(subscription)) return;
      if (set.size === 0) this.#topics.delete(topic);
    };
  }

  close(): void {
    this.#topics.clear();
  }
}
