import type { Logger } from 'pino';

/** How often a failure that keeps repeating is logged again. */
const REPEAT_LOG_MS = 30_000;

/**
 * The log of a step a timer repeats (a poll every fraction of a second): while its store is away
 * each round fails alike, and a line per round would bury every other line. The first failure is
 * logged at once; while it lasts, one line per `everyMs` says how many were left out; the first
 * success after is logged, so the log shows when it ended.
 */
export class RepeatedFailure {
  readonly #log: Logger;
  readonly #msg: string;
  readonly #everyMs: number;
  readonly #now: () => number;
  /** While failing: when the last line was written, and the failures since. */
  #failing: { loggedAt: number; since: number; leftOut: number } | undefined;

  constructor(log: Logger, msg: string, options: { everyMs?: number; now?: () => number } = {}) {
    this.#log = log;
    this.#msg = msg;
    this.#everyMs = options.everyMs ?? REPEAT_LOG_MS;
    this.#now = options.now ?? Date.now;
  }

  failed(error: unknown): void {
    const now = this.#now();
    const failing = this.#failing;
    if (failing === undefined) {
      this.#failing = { loggedAt: now, since: now, leftOut: 0 };
      this.#log.error({ err: error }, this.#msg);
      return;
    }
    if (now - failing.loggedAt < this.#everyMs) {
      failing.leftOut += 1;
      return;
    }
    this.#log.error(
      { err: error, repeated: failing.leftOut + 1, sinceMs: now - failing.since },
      `${this.#msg} (still)`,
    );
    failing.loggedAt = now;
    failing.leftOut = 0;
  }

  succeeded(): void {
    const failing = this.#failing;
    if (failing === undefined) return;
    this.#failing = undefined;
    this.#log.info({ failedForMs: this.#now() - failing.since }, `${this.#msg}: works again`);
  }
}
