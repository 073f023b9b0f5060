import { type Broker, type Publication, type PublicationHandler, topicOf } from '../types.js';

/** In-process fan-out: publish calls the topic's handlers inline, in subscription order. */
export class MemoryBroker implements Broker {
  readonly #topics = new Map<string, Set<PublicationHandler>>();

  publish(publication: Publication): void {
    const handlers = this.#topics.get(topicOf(publication.app, publication));
    if (!handlers) return;
    for (const handler of handlers) handler(publication);
  }

  subscribe(topic: string, handler: PublicationHandler): () => void {
    let handlers = this.#topics.get(topic);
    if (!handlers) {
      handlers = new Set();
      this.#topics.set(topic, handlers);
    }
    handlers.add(handler);
    return () => {
      const set = this.#topics.get(topic);
      if (!set) return;
      set.delete(handler);
      if (set.size === 0) this.#topics.delete(topic);
    };
  }

  close(): void {
    this.#topics.clear();
  }
}
