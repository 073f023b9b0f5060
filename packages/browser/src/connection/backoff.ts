/**
 * Reconnect delays: capped exponential backoff with full jitter.
 *
 * @example
 * connect({ url, site, reconnect: { capMs: 10_000 } });
 */
export interface BackoffPolicy {
  /** First delay ceiling after an ordinary loss (ms); default 500. */
  baseMs: number;
  /** First delay ceiling after a "back off" close code (4200-4299, 1009) (ms); default 5,000. */
  backoffBaseMs: number;
  /** Largest delay ceiling (ms); default 30,000. */
  capMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = { baseMs: 500, backoffBaseMs: 5000, capMs: 30_000 };

/** Whether a loss is an ordinary one or one after which the service asked the page to back off. */
export type BackoffKind = 'reconnect' | 'backoff';

/**
 * Full jitter: a random delay from 0 to min(cap, base x 2^attempt), so pages dropped together
 * do not come back together.
 */
export function backoffDelay(attempt: number, baseMs: number, capMs: number, random: () => number): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  const r = random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
  return Math.floor(unit * ceiling);
}

/** Counts attempts since the last welcome and gives the delay before the next one. */
export class Backoff {
  readonly #policy: BackoffPolicy;
  readonly #random: () => number;
  #attempt = 0;

  constructor(policy: BackoffPolicy, random: () => number) {
    this.#policy = policy;
    this.#random = random;
  }

  /** Attempts since the last welcome. */
  get attempt(): number {
    return this.#attempt;
  }

  next(kind: BackoffKind): number {
    const base = kind === 'backoff' ? this.#policy.backoffBaseMs : this.#policy.baseMs;
    return backoffDelay(this.#attempt++, base, this.#policy.capMs, this.#random);
  }

  /** Counts an attempt whose delay the service gave (a reconnect hint): the next draw is the next step. */
  skip(): void {
    this.#attempt++;
  }

  reset(): void {
    this.#attempt = 0;
  }
}
