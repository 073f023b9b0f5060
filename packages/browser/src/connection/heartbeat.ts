import type { Clock } from './clock.js';

/**
 * Notices silence: `onSilence` runs when no frame was fed for `limitMs`. Feeding is only a clock
 * read, not a timer reset, so a busy socket costs nothing; the one timer re-checks when it fires.
 */
export class Watchdog {
  readonly #clock: Clock;
  readonly #onSilence: (silentMs: number) => void;
  #limitMs = 0;
  #lastSeen = 0;
  #timer: unknown;

  constructor(clock: Clock, onSilence: (silentMs: number) => void) {
    this.#clock = clock;
    this.#onSilence = onSilence;
  }

  /** Starts (or restarts) watching with a new limit, counting from now. */
  arm(limitMs: number): void {
    this.stop();
    this.#limitMs = limitMs;
    this.#lastSeen = this.#clock.now();
    this.#schedule(limitMs);
  }

  /** Something arrived. */
  feed(): void {
    this.#lastSeen = this.#clock.now();
  }

  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(ms: number): void {
    this.#timer = this.#clock.setTimeout(() => this.#check(), ms);
  }

  #check(): void {
    this.#timer = undefined;
    const silent = this.#clock.now() - this.#lastSeen;
    if (silent >= this.#limitMs) this.#onSilence(silent);
    else this.#schedule(this.#limitMs - silent);
  }
}
