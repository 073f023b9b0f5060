import type { AskFrame, DeclineFrame, ReplyFrame } from '@realtime/protocol';

/**
 * Answers an ask from the customer's server. The returned value (or what the returned promise
 * resolves to) is sent as the reply's `data`; throwing or rejecting declines.
 */
export type AskHandler<T = unknown> = (data: T, meta: AskMeta) => unknown;

/** About one ask. */
export interface AskMeta {
  /** The ask's id, as the service gave it. */
  ask: string;
  event: string;
}

/**
 * The page's ask handlers, one per event name. An ask for an event with no handler is declined at
 * once, so the service need not wait for this page.
 */
export class AskResponder {
  readonly #handlers = new Map<string, AskHandler>();
  readonly #write: (frame: ReplyFrame | DeclineFrame, session: number) => void;
  readonly #session: () => number;

  /**
   * @param write writes an answer unless its socket (`session`) is gone: an answer belongs to the socket
   *   the ask came on.
   * @param session the number of the current socket.
   */
  constructor(write: (frame: ReplyFrame | DeclineFrame, session: number) => void, session: () => number) {
    this.#write = write;
    this.#session = session;
  }

  /** Sets the handler of an event (replacing any); returns a function that removes it. */
  set(event: string, handler: AskHandler): () => void {
    if (typeof handler !== 'function') throw new TypeError('an ask handler must be a function');
    this.#handlers.set(event, handler);
    return () => {
      if (this.#handlers.get(event) === handler) this.#handlers.delete(event);
    };
  }

  async handle(frame: AskFrame): Promise<void> {
    if (typeof frame.ask !== 'string') return;
    const session = this.#session();
    const handler = typeof frame.event === 'string' ? this.#handlers.get(frame.event) : undefined;
    if (!handler) {
      this.#write({ t: 'decline', ask: frame.ask }, session);
      return;
    }
    let data: unknown;
    try {
      data = await handler(frame.data, { ask: frame.ask, event: frame.event });
      // The reply must be JSON; a value without a JSON form declines rather than failing later.
      if (data !== undefined && JSON.stringify(data) === undefined) throw new TypeError('no JSON form');
    } catch {
      this.#write({ t: 'decline', ask: frame.ask }, session);
      return;
    }
    this.#write(data === undefined ? { t: 'reply', ask: frame.ask } : { t: 'reply', ask: frame.ask, data }, session);
  }
}
