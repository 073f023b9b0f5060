import { LIMITS, type Reply } from '@realtime/protocol';
import type { Logger } from 'pino';
import { type AskAsked, diagnostics } from '../core/diagnostics.js';
import type { NodeChannel } from '../core/node-channel.js';
import type { AskQuestion, Broker, LimitStore, NodeMessage, PresenceStore } from '../engines/types.js';

/** One open page of a user that can be asked. The gateway provides these. */
export interface AskTarget {
  /** Sends the question to the page; the page answers through AskService.reply or decline. */
  ask(askId: string, event: string, data: string): void;
}

/** Asks in flight per user by default: well above a burst a page answers (450 at once work). */
export const DEFAULT_MAX_ASKS_PER_USER = 500;

/** The user has as many asks in flight as allowed: the ask is refused at once, before any page sees it. */
export class TooManyAsks extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`the user already has ${limit} asks waiting for an answer; retry once some are answered`);
    this.limit = limit;
  }
}

interface PendingAsk {
  /** Whom it asked, for the diagnostics channels. */
  app: string;
  user: string;
  event: string;
  replies: Reply[];
  all: boolean;
  /** Pages that have not answered or declined yet: without `all`, none left means no reply can come. */
  waiting: number;
  /** Ends the ask with the replies it has; `timedOut` when its time ran out. */
  finish: (timedOut?: boolean) => void;
}

/** An ask of another node that pages here were given: where their answers go, until when. */
interface AskedHere {
  app: string;
  node: string;
  until: number;
}

export interface AskOptions {
  event: string;
  data: string;
  timeout: number;
  all: boolean;
}

export interface AskDeps {
  /** This node: the answers to its asks come to its channel. */
  node: string;
  broker: Broker;
  /** Where the answers of pages on other nodes arrive. */
  channel: NodeChannel;
  presence: PresenceStore;
  /** Where asks in flight per user are counted, over every node. */
  limits: LimitStore;
  log: Logger;
  now: () => number;
  maxAsksPerUser?: number;
}

/** How long past its timeout an ask of another node is remembered here (answers that are late anyway). */
const REMEMBER_PAST_TIMEOUT_MS = 5_000;

/**
 * How long past its timeout an ask's place in the user's count is kept at most: its node releases
 * it when the ask ends; this is for a node that died first.
 */
const SLOT_PAST_TIMEOUT_MS = 5_000;

/**
 * ask: the question goes to the user's topic, so their pages on every node get it; the answers come
 * back to this node's topic, whichever node the answering page is on. Without `all` the first reply
 * answers (or the last decline, counted against the user's pages on all nodes); with `all` every
 * reply until the timeout. No open page anywhere: answers at once with no replies.
 */
export class AskService {
  readonly #deps: AskDeps;
  readonly #pending = new Map<string, PendingAsk>();
  /** Asks of other nodes given to pages here, by ask id. */
  readonly #askedHere = new Map<string, AskedHere>();
  readonly #maxPerUser: number;
  #counter = 0;
  #sweep: NodeJS.Timeout | undefined;

  constructor(deps: AskDeps) {
    this.#deps = deps;
    this.#maxPerUser = deps.maxAsksPerUser ?? DEFAULT_MAX_ASKS_PER_USER;
    deps.channel.on('ask.reply', (message) => this.#answered(message));
    deps.channel.on('ask.decline', (message) => this.#decline(message.ask));
  }

  /** Starts forgetting the asks of other nodes once their time is over. */
  start(): void {
    this.#sweep = setInterval(() => this.#forgetOld(), 5_000);
    this.#sweep.unref();
  }

  /**
   * Throws TooManyAsks, before any page sees the ask, when the user has `maxAsksPerUser` asks in
   * flight, counted over every node. Rejects with a StoreError when the question could not be sent
   * (or the count could not be read).
   */
  async ask(app: string, user: string, options: AskOptions): Promise<Reply[]> {
    const key = `ask:${app}:${user}`;
    const askId = `${this.#deps.node}.${(++this.#counter).toString(36)}`;
    const ttlMs = options.timeout + SLOT_PAST_TIMEOUT_MS;
    const acquired = this.#deps.limits.acquire(key, askId, this.#maxPerUser, ttlMs, this.#deps.now());
    if (!(typeof acquired === 'boolean' ? acquired : await acquired)) {
      this.#asked(app, user, options, 'rate_limited');
      throw new TooManyAsks(this.#maxPerUser);
    }
    let pages: number;
    try {
      pages = await this.#deps.presence.userPages(app, user);
    } catch (error) {
      this.#release(key, askId);
      throw error;
    }
    if (pages === 0) {
      this.#release(key, askId);
      this.#asked(app, user, options, 'offline');
      return [];
    }
    const answered = new Promise<Reply[]>((resolve) => {
      const timer = setTimeout(() => pending.finish(true), options.timeout);
      const pending: PendingAsk = {
        app,
        user,
        event: options.event,
        replies: [],
        all: options.all,
        waiting: pages,
        finish: (timedOut) => {
          clearTimeout(timer);
          if (!this.#pending.delete(askId)) return;
          this.#release(key, askId);
          if (timedOut && pending.replies.length === 0) {
            if (diagnostics.answered.hasSubscribers) {
              diagnostics.answered.publish({
                node: this.#deps.node,
                app,
                user,
                event: options.event,
                outcome: 'timeout',
              });
            }
          }
          resolve(pending.replies);
        },
      };
      this.#pending.set(askId, pending);
    });
    try {
      const question: AskQuestion = {
        kind: 'ask',
        app,
        user,
        ask: askId,
        replyTo: this.#deps.node,
        event: options.event,
        data: options.data,
      };
      await this.#deps.broker.publish([question], this.#deps.now());
    } catch (error) {
      this.#pending.get(askId)?.finish();
      throw error;
    }
    this.#asked(app, user, options, undefined);
    return answered;
  }

  /** Tells the diagnostics channels of an ask that went out or was refused, when anyone listens. */
  #asked(app: string, user: string, options: AskOptions, refused: AskAsked['refused']): void {
    if (!diagnostics.asked.hasSubscribers) return;
    const { event, data } = options;
    diagnostics.asked.publish({ node: this.#deps.node, app, user, event, data, refused });
  }

  /** Gives an ask's place back; when that fails, the place ends by itself after the ask's time. */
  #release(key: string, askId: string): void {
    const failed = (error: unknown): void => {
      this.#deps.log.warn({ err: error }, 'releasing an ask from the count in flight failed');
    };
    try {
      const released = this.#deps.limits.release(key, askId);
      if (released instanceof Promise) released.catch(failed);
    } catch (error) {
      failed(error);
    }
  }

  /** The hub's part: a question for a user reached this node; each open page of the user here gets it. */
  deliver(question: AskQuestion, pages: readonly AskTarget[]): void {
    const { ask: askId, replyTo: node } = question;
    if (pages.length === 0) return;
    if (node !== this.#deps.node) {
      // Long enough for any ask's timeout: an answer after that finds nobody waiting anyway.
      this.#askedHere.set(askId, {
        app: question.app,
        node,
        until: this.#deps.now() + LIMITS.askTimeoutMaxMs + REMEMBER_PAST_TIMEOUT_MS,
      });
    }
    for (const page of pages) page.ask(askId, question.event, question.data);
  }

  /** A page's reply. Late or unknown replies are dropped. */
  reply(askId: string, data: unknown): void {
    if (this.#pending.has(askId)) this.#reply(askId, data, this.#deps.now());
    else this.#forward({ type: 'ask.reply', ask: askId, data: JSON.stringify(data) ?? 'null' });
  }

  /** A page that will not answer (no handler, or it closed): the ask ends early once nobody is left. */
  decline(askId: string): void {
    if (this.#pending.has(askId)) this.#decline(askId);
    else this.#forward({ type: 'ask.decline', ask: askId });
  }

  #reply(askId: string, data: unknown, at: number): void {
    const pending = this.#pending.get(askId);
    if (!pending) return;
    if (diagnostics.answered.hasSubscribers) {
      const { app, user, event } = pending;
      diagnostics.answered.publish({ node: this.#deps.node, app, user, event, outcome: 'reply', data });
    }
    pending.replies.push({ data, at });
    pending.waiting--;
    // With `all` the answer comes when the timeout is over, whoever has answered (section 4.3 rule 3).
    if (!pending.all) pending.finish();
  }

  #decline(askId: string): void {
    const pending = this.#pending.get(askId);
    if (!pending) return;
    if (diagnostics.answered.hasSubscribers) {
      const { app, user, event } = pending;
      diagnostics.answered.publish({ node: this.#deps.node, app, user, event, outcome: 'declined' });
    }
    pending.waiting--;
    if (!pending.all && pending.waiting <= 0) pending.finish();
  }

  /** An answer of a page here to another node's ask: sent to that node's topic. */
  #forward(message: Extract<NodeMessage, { type: 'ask.reply' | 'ask.decline' }>): void {
    const asked = this.#askedHere.get(message.ask);
    if (!asked) return;
    const answer = { kind: 'node', node: asked.node, app: asked.app, message } as const;
    Promise.resolve(this.#deps.broker.publish([answer], this.#deps.now())).catch((error: unknown) => {
      // The asking node then waits for its timeout: the ask answers with what it has.
      this.#deps.log.error({ err: error, app: asked.app }, 'sending an answer to an ask failed');
    });
  }

  /** A reply from a page on another node; one that cannot be read counts as a decline. */
  #answered(message: Extract<NodeMessage, { type: 'ask.reply' }>): void {
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      this.#decline(message.ask);
      return;
    }
    this.#reply(message.ask, data, this.#deps.now());
  }

  #forgetOld(): void {
    const now = this.#deps.now();
    for (const [askId, asked] of this.#askedHere) if (asked.until < now) this.#askedHere.delete(askId);
  }

  /** Ends every pending ask with what it has (server shutdown). */
  close(): void {
    clearInterval(this.#sweep);
    for (const pending of [...this.#pending.values()]) pending.finish();
  }
}
