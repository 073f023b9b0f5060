import type { LimitStore } from '../engines/types.js';
import { DEFAULT_INVITE_LIMITS, type InviteLimits, type InviteRate } from './options.js';

/** An invite refused by a bound: which one, its rate, and the ms until a token is back. */
export interface InviteRefusal {
  outcome: 'limited';
  limit: keyof InviteLimits;
  rate: InviteRate;
  retryMs: number;
}

/**
 * The invite bounds: a token bucket per caller and one per callee in the limit store, so they are
 * counted over every node. The caller's is taken first; a refused caller takes nothing from the callee.
 */
export class InviteLimiter {
  readonly #store: LimitStore;
  readonly #limits: InviteLimits;

  constructor(store: LimitStore, limits: Partial<InviteLimits> = {}) {
    this.#store = store;
    this.#limits = { ...DEFAULT_INVITE_LIMITS, ...limits };
  }

  /** Takes a token of `from` and of `to`; the refusal when either has none. Rejects when the store fails. */
  async take(app: string, from: string, to: string, nowMs: number): Promise<InviteRefusal | undefined> {
    // App keys hold no ':', so neither key can be read as another app's.
    return (
      (await this.#take('perCaller', `invite-from:${app}:${from}`, nowMs)) ??
      (await this.#take('perCallee', `invite-to:${app}:${to}`, nowMs))
    );
  }

  async #take(limit: keyof InviteLimits, key: string, nowMs: number): Promise<InviteRefusal | undefined> {
    const rate = this.#limits[limit];
    const retryMs = await this.#store.take(key, rate.perMinute / 60, rate.burst, nowMs);
    return retryMs === 0 ? undefined : { outcome: 'limited', limit, rate, retryMs };
  }
}

/** The refusal in a sentence for the page, naming the bound and its setting. */
export function inviteRefusalMessage(refusal: InviteRefusal, to: string): string {
  const { perMinute, burst } = refusal.rate;
  const who = refusal.limit === 'perCaller' ? 'calls placed by this user' : `calls to ${JSON.stringify(to)}`;
  const wait = Number.isFinite(refusal.retryMs) ? `in ${Math.max(1, Math.ceil(refusal.retryMs / 1000))} s` : 'later';
  return `too many ${who}: at most ${perMinute} a minute, ${burst} at once (calls.invites.${refusal.limit}); try again ${wait}`;
}
