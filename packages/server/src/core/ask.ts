import type { Reply } from '@realtime/protocol';

/** One open page of a user that can be asked. The gateway provides these. */
export interface AskTarget {
  /** Sends the question to the page; the page answers through AskService.reply. */
  ask(askId: string, event: string, data: string): void;
}

/** Where the asker finds the open pages of a user. */
export interface UserPages {
  askTargets(app: string, user: string): AskTarget[];
}

/** Nobody's pages: the directory until a gateway is attached. */
export const NO_PAGES: UserPages = { askTargets: () => [] };

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
  replies: Reply[];
  all: boolean;
  /** Pages that have not answered or declined yet: without `all`, none left means no reply can come. */
  waiting: number;
  finish: () => void;
}

export interface AskOptions {
  event: string;
  data: string;
  timeout: number;
  all: boolean;
}

/**
 * ask: sends to every open page of the user and waits. Without `all` the first reply answers;
 * with `all` every reply until the timeout. No open page: answers at once with no replies.
 */
export class AskService {
  readonly #pending = new Map<string, PendingAsk>();
  /** Asks in flight per `<app>:<user>`: bounded where asks start, not by closing the page that answers. */
  readonly #inFlight = new Map<string, number>();
  readonly #maxPerUser: number;
  #pages: UserPages;
  readonly #now: () => number;
  #counter = 0;

  constructor(deps: { pages?: UserPages; now: () => number; maxAsksPerUser?: number }) {
    this.#pages = deps.pages ?? NO_PAGES;
    this.#now = deps.now;
    this.#maxPerUser = deps.maxAsksPerUser ?? DEFAULT_MAX_ASKS_PER_USER;
  }

  /** The gateway attaches its page directory when it starts. */
  attach(pages: UserPages): void {
    this.#pages = pages;
  }

  /**
   * Throws TooManyAsks, at once, when the user has `maxAsksPerUser` asks in flight. App keys hold no
   * ':', so `<app>:<user>` names one user of one app.
   */
  ask(app: string, user: string, options: AskOptions): Promise<Reply[]> {
    const targets = this.#pages.askTargets(app, user);
    if (targets.length === 0) return Promise.resolve([]);
    const key = `${app}:${user}`;
    const inFlight = this.#inFlight.get(key) ?? 0;
    if (inFlight >= this.#maxPerUser) throw new TooManyAsks(this.#maxPerUser);
    this.#inFlight.set(key, inFlight + 1);
    const askId = `${this.#now().toString(36)}.${(++this.#counter).toString(36)}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => pending.finish(), options.timeout);
      const pending: PendingAsk = {
        replies: [],
        all: options.all,
        waiting: targets.length,
        finish: () => {
          clearTimeout(timer);
          if (!this.#pending.delete(askId)) return;
          const left = (this.#inFlight.get(key) ?? 1) - 1;
          if (left > 0) this.#inFlight.set(key, left);
          else this.#inFlight.delete(key);
          resolve(pending.replies);
        },
      };
      this.#pending.set(askId, pending);
      for (const target of targets) target.ask(askId, options.event, options.data);
    });
  }

  /** A page's reply. Late or unknown replies are dropped. */
  reply(askId: string, data: unknown): void {
    const pending = this.#pending.get(askId);
    if (!pending) return;
    pending.replies.push({ data, at: this.#now() });
    pending.waiting--;
    // With `all` the answer comes when the timeout is over, whoever has answered (section 4.3 rule 3).
    if (!pending.all) pending.finish();
  }

  /** A page that will not answer (no handler, or it closed): the ask ends early once nobody is left. */
  decline(askId: string): void {
    const pending = this.#pending.get(askId);
    if (!pending) return;
    pending.waiting--;
    if (!pending.all && pending.waiting <= 0) pending.finish();
  }

  /** Ends every pending ask with what it has (server shutdown). */
  closeAll(): void {
    for (const pending of [...this.#pending.values()]) pending.finish();
  }
}
