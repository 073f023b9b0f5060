/**
 * What the forwarding units of one node may take, per app and per page, so that one app cannot
 * hold every media port of the node: a page and an app hold a bounded number of units, and when the
 * port range runs short an app holding more than its share of it is refused before any other app
 * (an app alone on a service of one app may use the whole range).
 * Each peer session (a unit's sender, or a page receiving from a unit) holds one port per media
 * address while it lives; the budget counts sessions, not the sockets themselves.
 */

/** The bounds of units (streams.unitsPerPage, streams.unitsPerApp). */
export interface UnitLimits {
  /** Units one page may send to on a node at once (stream presenters and group pages' own units). */
  unitsPerPage: number;
  /** Units one app may have on a node at once. */
  unitsPerApp: number;
}

export const DEFAULT_UNIT_LIMITS: UnitLimits = { unitsPerPage: 4, unitsPerApp: 100 };

/** Which bound refused a unit or session. */
export type UnitLimit = 'unitsPerPage' | 'unitsPerApp' | 'fairShare';

/** A unit or session refused by a bound; the message names the bound, for the page. */
export class UnitLimitError extends Error {
  constructor(
    readonly limit: UnitLimit,
    message: string,
  ) {
    super(message);
    this.name = 'UnitLimitError';
  }
}

/** Releases what a unit or session held; a second call does nothing. */
export type Release = () => void;

function bump(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

export class UnitBudget {
  readonly #limits: UnitLimits;
  /** Sessions the port range holds (ports divided by media addresses); undefined without a range. */
  readonly #capacity: number | undefined;
  readonly #sessionsOfApp = new Map<string, number>();
  readonly #unitsOfApp = new Map<string, number>();
  readonly #unitsOfPage = new Map<string, number>();
  #sessions = 0;

  constructor(limits: UnitLimits, capacity: number | undefined) {
    this.#limits = limits;
    this.#capacity = capacity;
  }

  /** Sessions held now, on the whole node and by `app`. */
  held(app?: string): number {
    return app === undefined ? this.#sessions : (this.#sessionsOfApp.get(app) ?? 0);
  }

  /**
   * A new unit of `page` of `app` (its sender's session with it), or the bound it would pass.
   * `reserve`: another app may come (see #checkShare); false when no other app could use this node.
   */
  unit(app: string, page: string, reserve = true): Release {
    const ofPage = this.#unitsOfPage.get(page) ?? 0;
    if (ofPage >= this.#limits.unitsPerPage) {
      throw new UnitLimitError(
        'unitsPerPage',
        `a page sends to at most ${this.#limits.unitsPerPage} forwarding units on a node at once (streams.unitsPerPage): leave a stream or group call first`,
      );
    }
    const ofApp = this.#unitsOfApp.get(app) ?? 0;
    if (ofApp >= this.#limits.unitsPerApp) {
      throw new UnitLimitError(
        'unitsPerApp',
        `the app has ${ofApp} forwarding units on this node, its most (streams.unitsPerApp); try again later`,
      );
    }
    this.#checkShare(app, reserve);
    bump(this.#unitsOfPage, page, 1);
    bump(this.#unitsOfApp, app, 1);
    const session = this.#take(app);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      bump(this.#unitsOfPage, page, -1);
      bump(this.#unitsOfApp, app, -1);
      session();
    };
  }

  /** A page's session receiving from a unit of `app`, or the bound it would pass; `reserve` as for `unit`. */
  session(app: string, reserve = true): Release {
    this.#checkShare(app, reserve);
    return this.#take(app);
  }

  #take(app: string): Release {
    this.#sessions++;
    bump(this.#sessionsOfApp, app, 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#sessions--;
      bump(this.#sessionsOfApp, app, -1);
    };
  }

  /**
   * When a quarter of the range or less is free, an app holding its share or more is refused. Its
   * share is the range divided among the apps holding sessions here, plus one yet to come when
   * `reserve` (another app of the service may ask this node), so that one app cannot take the last
   * ports another app's presenter would need. An app alone with no reserve may take every port.
   */
  #checkShare(app: string, reserve: boolean): void {
    const capacity = this.#capacity;
    if (capacity === undefined) return;
    const free = capacity - this.#sessions;
    if (free > Math.ceil(capacity / 4)) return;
    const mine = this.held(app);
    const others = this.#sessionsOfApp.size - (mine > 0 ? 1 : 0);
    const sharing = others + 1 + (reserve ? 1 : 0);
    if (sharing === 1) return;
    const share = Math.max(1, Math.floor(capacity / sharing));
    if (mine < share) return;
    throw new UnitLimitError(
      'fairShare',
      `the media ports of this node are running short and the app holds ${mine} of ${capacity}, its share or more; try again later`,
    );
  }
}

/** Sessions a port range holds: each session binds one port per media address. */
export function rangeCapacity(range: readonly [number, number] | undefined, addresses: number): number | undefined {
  if (range === undefined) return undefined;
  return Math.floor((range[1] - range[0] + 1) / Math.max(1, addresses));
}
