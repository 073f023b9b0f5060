/**
 * Password checks of one node (scrypt: 16 MB and one of libuv's four threads each): at most
 * `running` at once, the others waiting their turn, one place per address, at most `waiting`
 * places. Turns go first to known browsers (one that signed in lately: a flood has none, since
 * only the password makes one), then to the addresses checked least in the last minute, then in
 * arrival order. A newcomer ranked ahead of the last in line takes its place when every place is
 * taken: the flood is refused `busy`, not the operator.
 */

/** Why a check was not queued: every place is taken by addresses checked as little, or its address has one already. */
export type QueueRefusal = 'full' | 'queued';

/** A turn that came (the function ending it), or `full`: the place was given to an address checked less. */
export type Turn = (() => void) | 'full';

export interface CheckQueueOptions {
  running: number;
  waiting: number;
  now?: () => number;
  /** How long a check counts against its address's priority (default a minute). */
  memoryMs?: number;
  /** Addresses remembered at most (default 10,000): the oldest are forgotten first. */
  remember?: number;
}

interface Rank {
  /** Sent from a browser that signed in lately (sessions.ts, the device cookie). */
  known: boolean;
  /** Checks of the address in the last `memoryMs` when it came. */
  checks: number;
}

interface Waiter extends Rank {
  address: string;
  resolve: (turn: Turn) => void;
}

/** Whether `a`'s turn comes before `b`'s: known browsers first, then the least checked. */
const ahead = (a: Rank, b: Rank) => (a.known !== b.known ? a.known : a.checks < b.checks);

export class CheckQueue {
  readonly #running: number;
  readonly #waiting: number;
  readonly #now: () => number;
  readonly #memoryMs: number;
  readonly #remember: number;
  #busy = 0;
  /** Checks waiting, in the order their turns come. */
  readonly #queue: Waiter[] = [];
  /** Addresses with a check running or waiting here. */
  readonly #addresses = new Set<string>();
  /** Checks started per address lately, the least recently checked first (Map order). */
  readonly #recent = new Map<string, { count: number; at: number }>();

  constructor(options: CheckQueueOptions) {
    this.#running = options.running;
    this.#waiting = options.waiting;
    this.#now = options.now ?? Date.now;
    this.#memoryMs = options.memoryMs ?? 60_000;
    this.#remember = options.remember ?? 10_000;
  }

  /** Checks running now, and waiting. */
  get size(): { running: number; waiting: number } {
    return { running: this.#busy, waiting: this.#queue.length };
  }

  /**
   * A turn for `address`: resolves, when it comes, to the function that ends it (call it once the
   * check is done, whatever its outcome), or to `full` when its place went to an address checked
   * less. Refused at once, taking nothing, when it cannot wait. `known`: the request came from a
   * browser that signed in lately.
   */
  enter(address: string, known = false): Promise<Turn> | QueueRefusal {
    if (this.#addresses.has(address)) return 'queued';
    if (this.#busy < this.#running) {
      this.#addresses.add(address);
      return Promise.resolve(this.#start(address));
    }
    const rank: Rank = { known, checks: this.#checks(address) };
    if (this.#queue.length >= this.#waiting) {
      // The last in line is the one ranked lowest (the latest of those): it gives its place up only
      // to one ranked ahead of it.
      const last = this.#queue.at(-1);
      if (last === undefined || !ahead(rank, last)) return 'full';
      this.#queue.pop();
      this.#addresses.delete(last.address);
      last.resolve('full');
    }
    this.#addresses.add(address);
    return new Promise((resolve) => {
      const waiter: Waiter = { address, ...rank, resolve };
      const at = this.#queue.findIndex((w) => ahead(rank, w));
      if (at < 0) this.#queue.push(waiter);
      else this.#queue.splice(at, 0, waiter);
    });
  }

  #start(address: string): () => void {
    this.#busy++;
    this.#counted(address);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#addresses.delete(address);
      this.#busy--;
      this.#next();
    };
  }

  #next(): void {
    while (this.#busy < this.#running) {
      const waiter = this.#queue.shift();
      if (waiter === undefined) return;
      waiter.resolve(this.#start(waiter.address));
    }
  }

  #checks(address: string): number {
    const seen = this.#recent.get(address);
    return seen !== undefined && seen.at > this.#now() - this.#memoryMs ? seen.count : 0;
  }

  #counted(address: string): void {
    const now = this.#now();
    const count = this.#checks(address) + 1;
    this.#recent.delete(address);
    this.#recent.set(address, { count, at: now });
    // Forget what is past the memory, and the oldest beyond the bound.
    for (const [old, seen] of this.#recent) {
      if (seen.at > now - this.#memoryMs && this.#recent.size <= this.#remember) break;
      this.#recent.delete(old);
    }
  }
}
