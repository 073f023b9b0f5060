import { randomBytes } from 'node:crypto';
import {
  type CallEndedFrame,
  type CallEndReason,
  type CallRingFrame,
  type IceServer,
  RING_MS,
} from '@realtime/protocol';
import type { Logger } from 'pino';
import type { EventSink } from '../core/events.js';
import { type NodeRegistry, SWEEP_BATCH } from '../core/node-registry.js';
import type { PageSignals } from '../core/page-signals.js';
import type { CallRecord, CallStore, LimitStore } from '../engines/types.js';
import { iceServers } from './ice.js';
import { InviteLimiter, type InviteRefusal } from './invite-limits.js';
import type { CallOptions } from './options.js';

/** How often rings past their time are looked for (at most: a tenth of a ring). */
const SWEEP_MS = 1_000;

/** A page in a call, as the call service sees it. */
export interface CallPage {
  readonly id: string;
  readonly user: string | null;
  send(frame: object): void;
}

export interface CallServiceDeps {
  node: string;
  calls: CallStore;
  /** The node leases: the calls of a dead node's pages end `failed`, taken by the node that claims it. */
  nodes: Pick<NodeRegistry, 'onLapse'>;
  /** Where the invite bounds are counted (the engine's, so every node counts the same). */
  limits: LimitStore;
  signals: Pick<PageSignals, 'toPage' | 'toUser'>;
  events: EventSink;
  log: Logger;
  now: () => number;
  options?: CallOptions;
}

/** Why a page's own frame ends a call. */
export type HangupCause = 'hangup' | 'reject' | 'failed' | 'gone';

/**
 * The lifecycle of calls between two people, the same on every node: the store decides each change
 * once (placed, answered, ended), so the ring, the answer and `call.ended` happen exactly once
 * wherever the two pages are. Frames reach pages through PageSignals.
 */
export class CallService {
  readonly #deps: CallServiceDeps;
  /** Calls of the pages on this node, by page id: ended `failed` when the page closes without hanging up. */
  readonly #pageCalls = new Map<string, Set<string>>();
  readonly #invites: InviteLimiter;
  #ringTimer: NodeJS.Timeout | undefined;
  #sweeping = false;

  constructor(deps: CallServiceDeps) {
    this.#deps = deps;
    this.#invites = new InviteLimiter(deps.limits, deps.options?.invites);
    deps.nodes.onLapse('calls', async ({ node }) => {
      const now = deps.now();
      const taken = await deps.calls.takeNode(node, SWEEP_BATCH);
      for (const call of taken) await this.#finish(call, 'failed', now);
      return taken.length < SWEEP_BATCH ? 'done' : 'more';
    });
  }

  /** Ends rings past their time on a timer, whichever node placed them. */
  async start(): Promise<void> {
    const ringMs = this.#deps.options?.ringMs ?? RING_MS;
    this.#ringTimer ??= setInterval(() => void this.sweep(), Math.min(SWEEP_MS, ringMs / 10));
    this.#ringTimer.unref();
  }

  ice(user: string): IceServer[] {
    return iceServers(this.#deps.options?.ice, user, this.#deps.now());
  }

  /**
   * Places a call from a page of `from` (checked by the caller: token, plan). Answers the call's id
   * and whether the callee was busy (then it has ended already, reported `busy`); `in_call` when the
   * caller is in a call; `limited` when the caller placed, or the callee got, too many calls lately
   * (then nothing rings and nothing is reported).
   */
  async place(
    app: string,
    page: CallPage & { user: string },
    to: string,
    media: CallRecord['media'],
    name: string | undefined,
  ): Promise<{ id: string; outcome: 'placed' | 'busy' | 'in_call' } | InviteRefusal> {
    const now = this.#deps.now();
    // Before the store: a busy callee's call is reported too, so it counts as much as one that rings.
    const refusal = await this.#invites.take(app, page.user, to, now);
    if (refusal) return refusal;
    const suffix = `${now.toString(36)}${randomBytes(8).toString('hex')}`;
    const id = `call_${suffix}`;
    const call: CallRecord = {
      app,
      id,
      name: name ?? id,
      from: page.user,
      to,
      media,
      fromPage: page.id,
      startedAt: now,
      ringUntil: now + (this.#deps.options?.ringMs ?? RING_MS),
    };
    const outcome = await this.#deps.calls.place(call);
    if (outcome === 'in_call') return { id, outcome };
    if (outcome === 'busy') {
      await this.#report(call, 'busy', now);
      return { id, outcome };
    }
    this.#track(page.id, id);
    const ring: CallRingFrame = { t: 'call.ring', call: id, from: call.from, media, ice: this.ice(to) };
    try {
      await this.#deps.signals.toUser(app, to, ring);
    } catch (error) {
      // The ring went nowhere: the call is over before it began.
      try {
        const ended = await this.#deps.calls.end(app, id);
        if (ended) await this.#finish(ended, 'failed', this.#deps.now());
      } catch {
        // The store is down: the ring's time or the node's lease ends the call.
      }
      throw error;
    }
    return { id, outcome };
  }

  /** Pages of the callee that open while their call rings ring too. */
  async ringing(app: string, page: CallPage & { user: string }): Promise<void> {
    const call = await this.#deps.calls.callOf(app, page.user);
    if (!call || call.to !== page.user || call.toPage !== undefined) return;
    page.send({ t: 'call.ring', call: call.id, from: call.from, media: call.media, ice: this.ice(page.user) });
  }

  /** A page of the callee accepts; undefined when it cannot (not theirs, answered or ended). */
  async accept(app: string, page: CallPage, id: string): Promise<CallRecord | undefined> {
    const call = await this.#deps.calls.get(app, id);
    if (!call || call.to !== page.user) return undefined;
    const answered = await this.#deps.calls.answer(app, id, page.id, this.#deps.now());
    if (!answered) return undefined;
    this.#track(page.id, id);
    await this.#deps.signals.toPage(app, answered.fromPage, { t: 'call.answered', call: id });
    // The callee's other pages stop ringing.
    await this.#deps.signals.toUser(app, answered.to, { t: 'call.ended', call: id, reason: 'elsewhere' }, page.id);
    return answered;
  }

  /**
   * A page ends a call it is part of: hangs up, rejects (a callee's page while it rings), reports
   * that the media failed, or is gone. False when the call is not the page's (or ended already).
   */
  async hangup(app: string, page: CallPage, id: string, cause: HangupCause): Promise<boolean> {
    const call = await this.#deps.calls.get(app, id);
    if (!call) return false;
    const ringing = call.toPage === undefined;
    const isCaller = call.fromPage === page.id;
    const isCallee = call.toPage === page.id || (ringing && cause !== 'gone' && call.to === page.user);
    if (!isCaller && !isCallee) return false;
    if (cause === 'reject' && !(ringing && !isCaller)) return false;
    const ended = await this.#deps.calls.end(app, id);
    if (!ended) return false;
    let reason: CallEndReason;
    if (cause === 'failed' || cause === 'gone') reason = 'failed';
    else if (ringing) reason = isCaller ? 'cancelled' : 'rejected';
    else reason = 'completed';
    // A callee's page that rejects hears `rejected`; their other pages stop ringing `elsewhere`, as on an accept.
    await this.#finish(ended, reason, this.#deps.now(), reason === 'rejected' ? page.id : undefined);
    return true;
  }

  /** The other page of an answered call, for a signal from one of its pages; undefined otherwise. */
  async peerOf(app: string, page: CallPage, id: string): Promise<string | undefined> {
    const call = await this.#deps.calls.get(app, id);
    if (!call || call.toPage === undefined) return undefined;
    if (call.fromPage === page.id) return call.toPage;
    if (call.toPage === page.id) return call.fromPage;
    return undefined;
  }

  /** A signal (offer, answer, candidate) from one page of an answered call to the other. */
  signal(app: string, peer: string, frame: object): Promise<void> {
    return this.#deps.signals.toPage(app, peer, frame);
  }

  /** A page closed: each of its calls ends `failed` (a page that hung up first has none left). */
  async pageClosed(app: string, page: CallPage): Promise<void> {
    const ids = this.#pageCalls.get(page.id);
    this.#pageCalls.delete(page.id);
    for (const id of ids ?? []) {
      try {
        await this.hangup(app, page, id, 'gone');
      } catch (error) {
        this.#deps.log.error({ err: error, app, call: id }, 'ending the call of a closed page failed');
      }
    }
  }

  /** Ends rings past their time (`missed`), one sweep at a time. Never throws. */
  async sweep(): Promise<void> {
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      const now = this.#deps.now();
      for (const call of await this.#deps.calls.takeMissed(now, SWEEP_BATCH)) await this.#finish(call, 'missed', now);
    } catch (error) {
      this.#deps.log.error({ err: error }, 'ending the calls that rang out failed');
    } finally {
      this.#sweeping = false;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#ringTimer);
  }

  #track(page: string, id: string): void {
    let ids = this.#pageCalls.get(page);
    if (!ids) {
      ids = new Set();
      this.#pageCalls.set(page, ids);
    }
    ids.add(id);
  }

  /**
   * Tells every page the call reached, then reports it. Frames lost to a store failure are logged.
   * `rejectedBy`: the callee's page that rejected it, the one page of theirs told `rejected`.
   */
  async #finish(call: CallRecord, reason: CallEndReason, endedAt: number, rejectedBy?: string): Promise<void> {
    for (const page of [call.fromPage, call.toPage]) if (page !== undefined) this.#pageCalls.get(page)?.delete(call.id);
    const ended: CallEndedFrame = { t: 'call.ended', call: call.id, reason };
    const { app } = call;
    let told: Promise<void>[];
    if (call.toPage !== undefined) {
      // Answered: the callee's other pages heard `elsewhere` at the answer, and pages opened since never rang.
      told = [this.#deps.signals.toPage(app, call.fromPage, ended), this.#deps.signals.toPage(app, call.toPage, ended)];
    } else if (rejectedBy === undefined) {
      // Ringing: every page of the callee, each ringing.
      told = [this.#deps.signals.toPage(app, call.fromPage, ended), this.#deps.signals.toUser(app, call.to, ended)];
    } else {
      told = [
        this.#deps.signals.toPage(app, call.fromPage, ended),
        this.#deps.signals.toPage(app, rejectedBy, ended),
        this.#deps.signals.toUser(app, call.to, { ...ended, reason: 'elsewhere' }, rejectedBy),
      ];
    }
    for (const result of await Promise.allSettled(told)) {
      if (result.status === 'rejected') {
        this.#deps.log.error({ err: result.reason, app: call.app, call: call.id }, 'telling pages a call ended failed');
      }
    }
    await this.#report(call, reason, endedAt);
  }

  async #report(call: CallRecord, reason: CallEndReason, endedAt: number): Promise<void> {
    const answeredAt = call.answeredAt ?? null;
    try {
      await this.#deps.events.record(call.app, {
        // The same id however often it is recorded: derived from the call's.
        id: `ev_${call.id.slice('call_'.length)}`,
        type: 'call.ended',
        call: call.name,
        call_id: call.id,
        from: call.from,
        to: call.to,
        media: call.media,
        started_at: call.startedAt,
        answered_at: answeredAt,
        ended_at: endedAt,
        seconds: answeredAt === null ? 0 : Math.max(0, Math.floor((endedAt - answeredAt) / 1000)),
        reason,
      });
    } catch (error) {
      this.#deps.log.error({ err: error, app: call.app, call: call.id }, 'recording call.ended failed');
    }
  }
}
