/**
 * Password checks of one node (scrypt: 16 MB and one of libuv's four threads each): at most
 * `running` at once, the others waiting their turn in arrival order with one place per address, at
 * most `waiting` places. One place per address makes the order round-robin over addresses: a flood
 * from many addresses delays the operator's sign-in by one turn each, never refuses it as `locked`.
 */

/** Why a check was not queued: every place is taken, or its address has one already. */
export type QueueRefusal = 'full' | 'queued';

export class CheckQueue {
  readonly #running: number;
  readonly #waiting: number;
  #busy = 0;
  /** Starts of the checks waiting, oldest first. */
  readonly #queue: (() => void)[] = [];
  /** Addresses with a check running or waiting here. */
  readonly #addresses = new Set<string>();

  constructor(limits: { running: number; waiting: number }) {
    this.#running = limits.running;
    this.#waiting = limits.waiting;
  }

  /** Checks running now, and waiting. */
  get size(): { running: number; waiting: number } {
    return { running: this.#busy, waiting: this.#queue.length };
  }

  /**
   * A turn for `address`: resolves, when it comes, to the function that ends it (call it once the
   * check is done, whatever its outcome). Refused at once, taking nothing, when it cannot wait.
   */
  enter(address: string): Promise<() => void> | QueueRefusal {
    if (this.#addresses.has(address)) return 'queued';
    if (this.#busy >= this.#running && this.#queue.length >= this.#waiting) return 'full';
    this.#addresses.add(address);
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      this.#addresses.delete(address);
      this.#busy--;
      this.#next();
    };
    if (this.#busy < this.#running) {
      this.#busy++;
      return Promise.resolve(end);
    }
    return new Promise((resolve) => {
      this.#queue.push(() => resolve(end));
    });
  }

  #next(): void {
    while (this.#busy < this.#running) {
      const start = this.#queue.shift();
      if (start === undefined) return;
      this.#busy++;
      start();
    }
  }
}
