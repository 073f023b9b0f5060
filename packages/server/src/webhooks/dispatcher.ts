import type { DeliveryError } from '@realtime/protocol';
import type { Logger } from 'pino';
import { diagnostics } from '../core/diagnostics.js';
import { RepeatedFailure } from '../core/repeated-failure.js';
import type { AppStore, StoredBatch, TryResult, WebhookStore } from '../engines/types.js';
import type { Deliverer } from './deliver.js';
import { eventJson, newId } from './event-json.js';
import { afterTry, isOverdue, isResendable, isTaken, type WebhookTimings } from './retry-policy.js';
import { signedTry } from './signed-try.js';
import { tryOutcome } from './try-outcome.js';

export interface DispatcherDeps {
  store: WebhookStore;
  apps: AppStore;
  deliverer: Deliverer;
  log: Logger;
  now: () => number;
  /** This node: the holder of the leases it takes. */
  node: string;
  timings: WebhookTimings;
}

/** Thrown by resend for the API to answer with. */
export class ResendRefused extends Error {
  readonly code: 'not_found' | 'not_resendable';
  constructor(code: 'not_found' | 'not_resendable', message: string) {
    super(message);
    this.code = code;
  }
}

/** What an immediate try (test or resend) answers (a type, not an interface: the API sends it as JSON). */
export type TryAnswer = { delivered: boolean; status: number };
/** The same with why nothing answered (status 0), as the dashboard shows it. */
export type TryReport = TryAnswer & { error?: DeliveryError };

const MAX_TRIES_AT_ONCE = 16;
/** Tries at once for one app: one slow endpoint must not hold every other app's webhooks back. */
const MAX_TRIES_PER_APP = 4;
/**
 * A lease outlasts a try (bounded by the answer time) by this much: the app lookup and saving the
 * result, on a store that may be across the network. A node that died holds its batches this long.
 */
const LEASE_MARGIN_MS = 5000;
/** Due batches read past those of apps at their limit, so other apps are not held back by them. */
const READ_PAST = 32;

/**
 * Sends due batches. Each node polls the store for due batches and leases the ones it takes
 * (`claimDue`), so a batch is tried by one node at a time; the lease ends when the try's result is
 * saved, or runs out when the node died mid-try and another node tries again (at least once).
 */
export class Dispatcher {
  readonly #deps: DispatcherDeps;
  readonly #lease: { holder: string; ms: number };
  readonly #inFlight = new Map<string, Promise<TryResult>>();
  readonly #perApp = new Map<string, number>();
  #poll: NodeJS.Timeout | undefined;
  /** The dispatch under way, and whether another was asked for meanwhile. */
  #dispatching: Promise<void> | undefined;
  #again = false;
  #closed = false;

  /** Polled several times a second: a store that is away is logged once in a while, not each poll. */
  readonly #readFailure: RepeatedFailure;

  constructor(deps: DispatcherDeps) {
    this.#readFailure = new RepeatedFailure(deps.log, 'reading due webhook batches failed', { now: deps.now });
    this.#deps = deps;
    this.#lease = { holder: deps.node, ms: deps.timings.answerMs + LEASE_MARGIN_MS };
  }

  start(): void {
    const every = Math.max(20, Math.min(250, this.#deps.timings.windowMs / 4));
    this.#poll = setInterval(() => this.dispatch(), every);
    this.#poll.unref();
    this.dispatch();
  }

  /** Whether this node is trying the batch now. */
  underWay(id: string): boolean {
    return this.#inFlight.has(id);
  }

  /**
   * Takes due batches and starts their tries, up to the limits. One dispatch at a time (asked for
   * during one, another follows), so the limits hold. Never throws; failures are logged.
   */
  dispatch(): void {
    if (this.#closed) return;
    if (this.#dispatching) {
      this.#again = true;
      return;
    }
    this.#again = false;
    this.#dispatching = this.#dispatchOnce()
      .catch((error: unknown) => this.#deps.log.error({ err: error }, 'dispatching webhook batches failed'))
      .finally(() => {
        this.#dispatching = undefined;
        if (this.#again) this.dispatch();
      });
  }

  async #dispatchOnce(): Promise<void> {
    const room = MAX_TRIES_AT_ONCE - this.#inFlight.size;
    if (room <= 0) return;
    const { store } = this.#deps;
    const full = [...this.#perApp.values()].some((n) => n >= MAX_TRIES_PER_APP);
    let due: StoredBatch[];
    try {
      due = await store.claimDue(this.#deps.now(), room + (full ? READ_PAST : 0), this.#lease);
    } catch (error) {
      this.#readFailure.failed(error);
      return;
    }
    this.#readFailure.succeeded();
    const back: StoredBatch[] = [];
    for (const batch of due) {
      // Its try outlived the lease and is still running: the claim renewed the lease; leave it be.
      if (this.#inFlight.has(batch.id)) continue;
      const busy = this.#inFlight.size >= MAX_TRIES_AT_ONCE || (this.#perApp.get(batch.app) ?? 0) >= MAX_TRIES_PER_APP;
      if (busy || this.#closed) {
        back.push(batch);
      } else if (isOverdue(this.#deps.timings, batch, this.#deps.now())) {
        await this.#giveUp(batch);
      } else {
        this.#start(batch, 'scheduled');
      }
    }
    await Promise.all(back.map((batch) => this.#handBack(batch)));
  }

  /** Overdue past the give-up time: given up without a try. */
  async #giveUp(batch: StoredBatch): Promise<void> {
    const now = this.#deps.now();
    try {
      await this.#deps.store.saveTry({ ...batch, state: 'given_up', nextAt: null, doneAt: now }, this.#lease.holder);
    } catch (error) {
      // Still due once the lease runs out: a later poll gives it up when the store takes writes again.
      this.#deps.log.error({ err: error, batch: batch.id }, 'giving up an overdue webhook batch failed');
    }
  }

  /** Ends the lease of a batch taken but not tried (saved as claimed). Never rejects. */
  async #handBack(batch: StoredBatch): Promise<void> {
    try {
      await this.#deps.store.saveTry(batch, this.#lease.holder);
    } catch (error) {
      // The lease runs out by itself; the batch only waits that long.
      this.#deps.log.error({ err: error, batch: batch.id }, 'handing back a webhook batch failed');
    }
  }

  /** Starts one try of a batch leased to this node; its failures are logged (and the promise rejects). */
  #start(batch: StoredBatch, kind: 'scheduled' | 'resend'): Promise<TryResult> {
    const running = this.#try(batch, kind);
    this.#inFlight.set(batch.id, running);
    this.#perApp.set(batch.app, (this.#perApp.get(batch.app) ?? 0) + 1);
    const done = () => {
      this.#inFlight.delete(batch.id);
      const left = (this.#perApp.get(batch.app) ?? 1) - 1;
      if (left > 0) this.#perApp.set(batch.app, left);
      else this.#perApp.delete(batch.app);
      // A slot is free: due batches need not wait for the next poll.
      this.dispatch();
    };
    running.then(done, (error: unknown) => {
      done();
      this.#deps.log.error({ err: error, batch: batch.id }, 'webhook try failed to run');
    });
    return running;
  }

  /** One try: the app as it is now, a signed POST, then the result saved (which ends the lease). */
  async #try(batch: StoredBatch, kind: 'scheduled' | 'resend'): Promise<TryResult> {
    const { store, apps, deliverer, log, now, timings } = this.#deps;
    let result: TryResult;
    try {
      result = await signedTry(deliverer, await apps.get(batch.app), batch, now());
    } catch (error) {
      // No try was made (the app store failed): the batch goes back as it was.
      await this.#handBack(batch);
      throw error;
    }
    const next = afterTry(timings, batch, result, kind, now());
    if (diagnostics.webhook.hasSubscribers) {
      diagnostics.webhook.publish({ node: this.#deps.node, app: batch.app, batch: next, kind, result });
    }
    try {
      await store.saveTry(next, this.#lease.holder, tryOutcome(result));
    } catch (error) {
      // The try happened; once the lease runs out the batch is tried again (at least once).
      log.error({ err: error, batch: batch.id }, 'saving a webhook try failed');
    }
    if (!isTaken(result)) {
      log.warn(
        { batch: batch.id, app: batch.app, status: result.status, error: result.error, next_at: next.nextAt },
        'webhook try failed',
      );
    }
    return result;
  }

  /** POST /webhooks/test: a batch of one `webhook.test` event, stored leased to this node and tried at once. */
  async test(app: string): Promise<TryReport> {
    const now = this.#deps.now();
    const event = eventJson({ type: 'webhook.test' }, now);
    const batch = await this.#deps.store.addBatch(app, newId('b_', now), [event], now, this.#lease);
    return answer(await this.#start(batch, 'scheduled'));
  }

  /** POST /webhooks/{id}/resend: one immediate try of the same body, same event ids. */
  async resend(app: string, id: string): Promise<TryReport> {
    const { store, timings } = this.#deps;
    const found = await store.get(id);
    if (!found || found.app !== app) throw new ResendRefused('not_found', 'no webhook batch of this app has that id');
    if (this.#inFlight.has(id)) throw underWay();
    refuseUnlessResendable(timings, found, this.#deps.now());
    const claimed = await store.claim(id, this.#deps.now(), this.#lease);
    if (claimed === undefined) throw new ResendRefused('not_found', 'no webhook batch of this app has that id');
    if (claimed === 'busy') throw underWay();
    try {
      // It may have been taken by a try that ended in between.
      refuseUnlessResendable(timings, claimed, this.#deps.now());
    } catch (error) {
      await this.#handBack(claimed);
      throw error;
    }
    return answer(await this.#start(claimed, 'resend'));
  }

  /** Takes no more batches; waits (bounded by the answer time) for tries under way. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#poll);
    await this.#dispatching;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#inFlight.values()]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, this.#deps.timings.answerMs + 1000);
      }),
    ]);
    clearTimeout(timer);
  }
}

function answer(result: TryResult): TryReport {
  const report: TryReport = { delivered: isTaken(result), status: result.status };
  if (result.error) report.error = result.error;
  return report;
}

function underWay(): ResendRefused {
  return new ResendRefused('not_resendable', 'a try of this batch is under way');
}

function refuseUnlessResendable(timings: WebhookTimings, batch: StoredBatch, now: number): void {
  if (isResendable(timings, batch, now)) return;
  throw new ResendRefused(
    'not_resendable',
    batch.state === 'taken' ? 'the batch was taken' : 'the batch is past its resend window',
  );
}
