/**
 * Bounds of the outbox, the sends waiting for their room to be joined.
 *
 * @example
 * connect({ url, site, outbox: { maxFrames: 100 } });
 */
export interface OutboxLimits {
  /** Most frames waiting at once; default 1,000. */
  maxFrames: number;
  /** Most bytes of data waiting at once; default 4 MiB. */
  maxBytes: number;
}

export const DEFAULT_OUTBOX: Readonly<OutboxLimits> = { maxFrames: 1000, maxBytes: 4 * 1_048_576 };

/** What the outbox holds: something for one room, with its size. */
export interface OutboxEntry {
  room: string;
  bytes: number;
}

/**
 * Sends waiting for their room to be joined: before the first `welcome`, while reconnecting, and
 * while a (re)join is under way. Bounded in frames and bytes; a push over the bound is refused,
 * so a page offline for long fails fast instead of growing without limit.
 */
export class Outbox<E extends OutboxEntry> {
  readonly #limits: OutboxLimits;
  #entries: E[] = [];
  #bytes = 0;

  constructor(limits: OutboxLimits) {
    this.#limits = limits;
  }

  /** Adds an entry at the end; false (and nothing added) when that would pass a bound. */
  push(entry: E): boolean {
    if (this.#entries.length >= this.#limits.maxFrames) return false;
    if (this.#bytes + entry.bytes > this.#limits.maxBytes) return false;
    this.#entries.push(entry);
    this.#bytes += entry.bytes;
    return true;
  }

  /** Removes and returns the entries of one room, oldest first. */
  take(room: string): E[] {
    const taken: E[] = [];
    const kept: E[] = [];
    for (const entry of this.#entries) (entry.room === room ? taken : kept).push(entry);
    if (taken.length === 0) return taken;
    this.#entries = kept;
    for (const entry of taken) this.#bytes -= entry.bytes;
    return taken;
  }

  get size(): number {
    return this.#entries.length;
  }

  get bytes(): number {
    return this.#bytes;
  }
}
