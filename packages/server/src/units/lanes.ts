/**
 * Steps that must not overlap, one lane per key: a lane runs its steps one after another. A step
 * asked for with a `kind` while one of the same kind still waits its turn at the lane's end joins
 * that one instead of queueing again, so a burst of equal requests costs at most two runs (the one
 * running and the one waiting).
 */
interface Lane {
  tail: Promise<unknown>;
  /** The last step queued and not started yet, when it has a kind. */
  waiting: { kind: string; done: Promise<unknown> } | undefined;
}

export class Lanes {
  readonly #lanes = new Map<string, Lane>();

  /** How many keys have steps running or waiting. */
  get size(): number {
    return this.#lanes.size;
  }

  /** Settles once no lane has a step running or waiting (steps asked for meanwhile included). */
  async idle(): Promise<void> {
    while (this.#lanes.size > 0) {
      await Promise.all([...this.#lanes.values()].map((lane) => lane.tail.catch(() => undefined)));
    }
  }

  /**
   * Runs `step` on the lane of `key` once the steps before it ended (however they ended). A step
   * that joined a waiting one resolves undefined once that one ran: its caller has nothing to do.
   */
  run<T>(key: string, step: () => Promise<T>, kind?: string): Promise<T | undefined> {
    let lane = this.#lanes.get(key);
    if (kind !== undefined && lane?.waiting?.kind === kind) {
      return lane.waiting.done.then(
        () => undefined,
        () => undefined,
      );
    }
    if (!lane) {
      lane = { tail: Promise.resolve(), waiting: undefined };
      this.#lanes.set(key, lane);
    }
    const own = lane;
    let waiting: Lane['waiting'];
    const done = own.tail
      .catch(() => undefined)
      .then(() => {
        if (own.waiting === waiting) own.waiting = undefined;
        return step();
      });
    waiting = kind === undefined ? undefined : { kind, done };
    own.waiting = waiting;
    own.tail = done;
    const settled = () => {
      if (own.tail === done && this.#lanes.get(key) === own) this.#lanes.delete(key);
    };
    done.then(settled, settled);
    return done;
  }
}
