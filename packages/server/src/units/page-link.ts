/**
 * One receiving page's downlink, shared by its video outputs on this node: a page in a group call
 * gets each sender's video from that sender's unit, over a connection of its own, and all of them
 * through the one link. Each output estimates its own connection (LinkEstimate); alone, each would
 * take the whole link for itself, and one's probe would fill the queue the others' video waits in.
 * So, for a page with two outputs or more here:
 *
 * - One probe at a time per page, and none for SETTLE_MS after one ended (its queue drains), or for
 *   the page's wait after one failed (doubled by each failure up to MAX_WAIT_MS, reset by a success).
 * - Trouble seen by any output (its packets asked again, its link queueing) fails the page's running
 *   probe at once, whoever runs it: a probe that overflows the link may cost the others' packets
 *   while its own get through. Outside a probe, an output whose link loses a share of its packets
 *   (LinkEstimate's loss cap) caps the page at DECREASE times what its outputs' layers send together.
 * - A probe that went through (the caller says so once its link settled) lifts the cap to what the
 *   page carried then: the others' layers and the prober's layer and padding. What it carried also
 *   bounds the page's moves up from then on, before any trouble: each output's own estimate is of
 *   its own connection, measured while the others sent what they sent then, so two outputs that each
 *   earned the next layer alone would both move up and overflow the link together (seen: a page
 *   behind 800 kbit/s moved both its cameras up within 3 s and lost packets of both for 1.5 s).
 * - Each output's share of the cap is what the others' chosen layers leave of it (`budget`); its
 *   share of what the page carried bounds its moves up (`room`). Until the page is capped, its
 *   probes may still double that share (a free link is found in a few probes); once capped, they
 *   pad the next layer's extra rate only.
 *
 * A page alone here (one output) is left to its LinkEstimate: `budget` is undefined and probes are
 * never held back. Pages whose outputs are on several nodes share nothing across nodes.
 */

/** After a page's probe ended, how long before the next may start (ms): its queue drains, its loss is asked again. */
const SETTLE_MS = 1000;
/** The page's first wait after a failed probe (ms), doubled by each failure after it. */
const FIRST_WAIT_MS = 2000;
const MAX_WAIT_MS = 8000;
/** Trouble outside a probe caps the page at this times what its layers send. */
const DECREASE = 0.85;
/** One overload is one decrease, whatever its outputs report of it (ms). */
const DECREASE_GAP_MS = 1000;

export class PageLinks {
  readonly #pages = new Map<string, PageLink>();

  /** A new output of `page`'s: its share of the page's link, until it leaves. */
  join(page: string): PageShare {
    let link = this.#pages.get(page);
    if (!link) {
      const made = new PageLink(() => {
        // Only this link: the page may have a newer one by now.
        if (this.#pages.get(page) === made) this.#pages.delete(page);
      });
      this.#pages.set(page, made);
      link = made;
    }
    return link.join();
  }

  /** How many pages have outputs here (for tests). */
  get size(): number {
    return this.#pages.size;
  }
}

/** A share of a page's link, for a page that is alone (tests, and outputs made without a page). */
export function soloShare(): PageShare {
  return new PageLink(() => undefined).join();
}

class PageLink {
  readonly shares = new Set<PageShare>();
  /** The most the page's video carries together (bits/s); undefined until trouble was seen. */
  cap: number | undefined;
  /** The most the page's video carried together during a probe that worked (bits/s). */
  known: number | undefined;
  prober: PageShare | undefined;
  nextProbeAt = Number.NEGATIVE_INFINITY;
  wait = FIRST_WAIT_MS;
  decreasedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly empty: () => void) {}

  join(): PageShare {
    const share = new PageShare(this);
    this.shares.add(share);
    return share;
  }

  leave(share: PageShare): void {
    // Once: a second leave must not empty a link the page joined again meanwhile.
    if (!this.shares.delete(share)) return;
    if (this.prober === share) this.prober = undefined;
    if (this.shares.size === 0) this.empty();
  }

  get shared(): boolean {
    return this.shares.size > 1;
  }

  /** What the page's outputs' chosen layers send together, but `except`'s. */
  sending(except?: PageShare): number {
    let sum = 0;
    for (const share of this.shares) if (share !== except) sum += share.rate;
    return sum;
  }
}

export class PageShare {
  /** What this output's chosen layer sends (bits/s); the caller keeps it current. */
  rate = 0;
  #onProbeFailed: (() => void) | undefined;

  constructor(private readonly link: PageLink) {}

  /** Whether the page has other outputs here (the rules above apply). */
  get shared(): boolean {
    return this.link.shared;
  }

  /** What this output may send (bits/s): the page's cap less the others' layers; undefined while uncapped or alone. */
  get budget(): number | undefined {
    const { cap } = this.link;
    if (!this.link.shared || cap === undefined) return undefined;
    return Math.max(0, cap - this.link.sending(this));
  }

  /**
   * What this output may move up to (bits/s): what the page was seen to carry (a probe that went
   * through, or its cap) less the others' layers; undefined while nothing is known or alone. Not a
   * reason to move down: the others' layers swing (a keyframe), and outputs that moved down and up
   * in turn as each other's rate swung were seen.
   */
  get room(): number | undefined {
    const { cap, known } = this.link;
    if (!this.link.shared || (cap === undefined && known === undefined)) return undefined;
    const bound = Math.min(cap ?? Number.POSITIVE_INFINITY, known ?? Number.POSITIVE_INFINITY);
    return Math.max(0, bound - this.link.sending(this));
  }

  /** Whether the page has other outputs here and its link was found full (its cap is set). */
  get capped(): boolean {
    return this.link.shared && this.link.cap !== undefined;
  }

  /** `listener` is called when another output's trouble fails this one's probe. */
  onProbeFailed(listener: () => void): void {
    this.#onProbeFailed = listener;
  }

  /** Whether this output may start a probe now; when so, it holds the page's probe until probeEnded. */
  startProbe(nowMs: number): boolean {
    const link = this.link;
    if (!link.shared) return true;
    if (link.prober !== undefined && link.prober !== this) return false;
    if (nowMs < link.nextProbeAt) return false;
    link.prober = this;
    return true;
  }

  /**
   * This output's probe ended; `carried` is what it sent meanwhile (its layer and padding, bits/s),
   * counted when `worked` (the caller says so once its link settled).
   */
  probeEnded(worked: boolean, carried: number, nowMs: number): void {
    const link = this.link;
    if (link.prober !== this) return;
    link.prober = undefined;
    if (worked) {
      link.wait = FIRST_WAIT_MS;
      link.nextProbeAt = nowMs + SETTLE_MS;
      const together = link.sending(this) + carried;
      link.known = Math.max(link.known ?? 0, together);
      if (link.cap !== undefined) link.cap = Math.max(link.cap, together);
      return;
    }
    link.nextProbeAt = nowMs + link.wait;
    link.wait = Math.min(link.wait * 2, MAX_WAIT_MS);
  }

  /**
   * This output's packets were asked again (or its link queued): a probe another output of the
   * page runs fails at once.
   */
  lost(): void {
    const prober = this.link.prober;
    if (this.link.shared && prober !== undefined && prober !== this) prober.#onProbeFailed?.();
  }

  /**
   * This output's link lost a share of its packets, outside any probe of the page: the page's layers
   * are more than its link carries, and its cap comes down (once per DECREASE_GAP_MS).
   */
  overloaded(nowMs: number): void {
    const link = this.link;
    if (!link.shared || link.prober !== undefined || nowMs - link.decreasedAt < DECREASE_GAP_MS) return;
    const sending = link.sending();
    if (sending <= 0) return;
    link.cap = Math.min(link.cap ?? Number.POSITIVE_INFINITY, DECREASE * sending);
    link.decreasedAt = nowMs;
  }

  leave(): void {
    this.link.leave(this);
  }
}
