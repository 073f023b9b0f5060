/**
 * The forwarding units of this node: one unit per sender's offer (a new offer starts a new unit),
 * each with the viewer sessions of the pages receiving that sender's media, wherever those pages
 * are. A live stream's presenter has one; in a group call in unit mode every page has one. The host
 * speaks WebRTC only: which unit a key names, who may do what and where offers go are its callers'.
 */
import type { Logger } from 'pino';
import type { IceSettings } from './ice-settings.js';
import { Lanes } from './lanes.js';
import { PageLinks } from './page-link.js';
import type { IceCandidateInit, PresenterSession, SessionEnd, ViewerSession } from './peer-sessions.js';
import { SessionClosedError } from './session-errors.js';
import { DEFAULT_UNIT_LIMITS, rangeCapacity, UnitBudget, type UnitLimits } from './unit-budget.js';
import type { VideoWants } from './video-wants.js';

/** How long close() waits for the steps in flight (a session's end waits at most 5 s for its description). */
const CLOSE_WAIT_MS = 10_000;

export interface UnitHostDeps {
  media: IceSettings;
  /** A session whose media has not connected by then ends as failed, and its port is free again. */
  connectTimeoutMs: number;
  /** Units per page and per app on this node; DEFAULT_UNIT_LIMITS when absent. */
  limits?: UnitLimits;
  log: Logger;
  /**
   * Whether another app than one may ask this node for units (MediaApps): when not, an app alone
   * may use the whole port range. Absent: always, a share is kept for an app yet to come.
   */
  severalApps?: () => Promise<boolean>;
  /**
   * Makes a unit: a ForwardingUnit on `media`, unless a test gives fakes. `pages` are the receiving
   * pages' links, one for all the host's units (a page's sessions on several units share its link).
   */
  newUnit?: (media: IceSettings, pages: PageLinks) => MediaUnit;
}

/** Makes a unit on `media`, its viewers' pages' links in `pages`. */
type UnitMaker = (media: IceSettings, pages: PageLinks) => MediaUnit;

/** What the host needs of a forwarding unit (ForwardingUnit's sessions and end). */
export interface MediaUnit {
  createPresenter(id: string): PresenterSession;
  createViewer(id: string): ViewerSession;
  /** What a receiving page asks of its video (adaptive stream); false when it has no session there. */
  setViewerVideo(id: string, wants: VideoWants): boolean;
  /** Dynacast: hears how many of its lowest video layers the sender should send, when that changes. */
  onSendLayers?(listener: (count: number) => void): void;
  close(): Promise<void>;
}

/** Who a unit is for: the app, and the page sending to it. */
export interface UnitOwner {
  app: string;
  page: string;
}

/** What one unit tells whoever started it. */
export interface UnitEvents {
  /** The sender's media reached the unit: viewers may be opened now. */
  connected(): void;
  /** The sender's media failed or never connected (not when the host ended the unit on purpose). */
  failed(): void;
  /**
   * Dynacast: the sender's page should send only its `count` lowest video layers (the others no
   * viewer can use now); tell it.
   */
  sendLayers?(count: number): void;
}

interface Hosted {
  app: string;
  sender: string;
  unit: MediaUnit;
  presenter: PresenterSession;
  connected: boolean;
  viewers: Map<string, ViewerSession>;
  /** The last video wants of each receiving page, for its next session too (a restart, a late open). */
  wants: Map<string, VideoWants>;
}

export class UnitHost {
  readonly #deps: UnitHostDeps;
  /** By the caller's key: a stream's, or a group page's. */
  readonly #hosted = new Map<string, Hosted>();
  /**
   * One lane per unit key (its sender's offers and its end) and one per receiving page of a unit
   * (its opens and closes): a burst of offers or restarts runs one at a time, never two sessions
   * of one page being made at once.
   */
  readonly #lanes = new Lanes();
  readonly #budget: UnitBudget;
  readonly #unitMaker: () => Promise<UnitMaker>;
  /** The receiving pages' links: a page's sessions on several units here share its one link. */
  readonly #pages = new PageLinks();
  #closed = false;

  constructor(deps: UnitHostDeps) {
    this.#deps = deps;
    const { newUnit } = deps;
    this.#unitMaker = newUnit ? async () => newUnit : forwardingUnits;
    this.#budget = new UnitBudget(
      deps.limits ?? DEFAULT_UNIT_LIMITS,
      rangeCapacity(deps.media.portRange, deps.media.hostAddresses.length),
    );
  }

  /** How many units run here, the viewer sessions they hold, and the sessions counted against the bounds. */
  get size(): { units: number; viewers: number; sessions: number } {
    let viewers = 0;
    for (const hosted of this.#hosted.values()) viewers += hosted.viewers.size;
    return { units: this.#hosted.size, viewers, sessions: this.#budget.held() };
  }

  /** Whether the unit of `key` runs here for this sending page. */
  hosts(key: string, sender: string): boolean {
    return this.#hosted.get(key)?.sender === sender;
  }

  /**
   * The sender's offer: a new unit takes it (an earlier unit of the key ends, with its viewers:
   * they get the new unit's offers once it connects). Answers the unit's answer, or undefined when a
   * later offer or the unit's end overtook this one (that answer is for nobody). Rejects with a
   * UnitLimitError when a bound of the page or app refuses a new unit.
   */
  async present(key: string, owner: UnitOwner, offerSdp: string, events: UnitEvents): Promise<string | undefined> {
    return this.#lanes.run(key, async () => {
      await this.#end(key);
      const reserve = await this.#reserve();
      const newUnit = await this.#unitMaker();
      // The host closed while this offer waited its turn: no unit after close().
      if (this.#closed) return undefined;
      const release = this.#budget.unit(owner.app, owner.page, reserve);
      let unit: MediaUnit;
      let presenter: PresenterSession;
      try {
        unit = newUnit(this.#deps.media, this.#pages);
        presenter = unit.createPresenter(owner.page);
      } catch (error) {
        // No session holds the count, so nothing else gives it back.
        release();
        throw error;
      }
      const hosted: Hosted = {
        app: owner.app,
        sender: owner.page,
        unit,
        presenter,
        connected: false,
        viewers: new Map(),
        wants: new Map(),
      };
      this.#hosted.set(key, hosted);
      unit.onSendLayers?.((count) => {
        if (this.#hosted.get(key) === hosted) events.sendLayers?.(count);
      });
      const timer = setTimeout(() => void presenter.close(), this.#deps.connectTimeoutMs);
      timer.unref();
      presenter.onConnected(() => {
        clearTimeout(timer);
        hosted.connected = true;
        events.connected();
      });
      presenter.onEnded((reason: SessionEnd) => {
        clearTimeout(timer);
        release();
        // Ended by the host (left, replaced, closed): the caller knows. Anything else is a failure.
        if (this.#hosted.get(key) !== hosted) return;
        this.#hosted.delete(key);
        void unit.close();
        if (reason !== 'unit-closed') events.failed();
      });
      try {
        return await presenter.answer(offerSdp);
      } catch (error) {
        if (this.#hosted.get(key) === hosted) {
          this.#hosted.delete(key);
          await unit.close();
        }
        if (error instanceof SessionClosedError) return undefined;
        throw error;
      }
    });
  }

  async presenterCandidate(key: string, sender: string, candidate: IceCandidateInit): Promise<void> {
    const hosted = this.#hosted.get(key);
    if (hosted?.sender === sender) await hosted.presenter.addCandidate(candidate);
  }

  /**
   * Opens a viewer session for a page on the unit of `key` and answers the unit's offer for it; the
   * caller sends it to the page. Undefined when there is nothing to offer: no unit here, its sender's
   * media has not connected yet (its `connected` opens the viewers then), or the page has a session
   * and this is no `restart` (its media failed: a new session replaces it).
   */
  async openViewer(key: string, page: string, restart: boolean): Promise<string | undefined> {
    // Restarts asked for while one waits its turn are that one: a burst makes at most two sessions.
    return this.#lanes.run(
      `${key}\u0000${page}`,
      () => this.#openViewer(key, page, restart),
      restart ? 'restart' : 'open',
    );
  }

  async #openViewer(key: string, page: string, restart: boolean): Promise<string | undefined> {
    const reserve = await this.#reserve();
    const hosted = this.#hosted.get(key);
    if (!hosted?.connected) return undefined;
    const existing = hosted.viewers.get(page);
    if (existing && !restart) return undefined;
    const release = this.#budget.session(hosted.app, reserve);
    let viewer: ViewerSession;
    try {
      viewer = hosted.unit.createViewer(page);
    } catch (error) {
      release();
      throw error;
    }
    hosted.viewers.set(page, viewer);
    const wants = hosted.wants.get(page);
    if (wants) hosted.unit.setViewerVideo(page, wants);
    const timer = setTimeout(() => void viewer.close(), this.#deps.connectTimeoutMs);
    timer.unref();
    viewer.onConnected(() => clearTimeout(timer));
    viewer.onEnded(() => {
      clearTimeout(timer);
      release();
      if (hosted.viewers.get(page) === viewer) hosted.viewers.delete(page);
    });
    let sdp: string;
    try {
      sdp = await viewer.offer();
    } catch (error) {
      await viewer.close();
      if (error instanceof SessionClosedError) return undefined;
      throw error;
    }
    // Replaced or closed while the offer was made: that offer is for nobody.
    return viewer === hosted.viewers.get(page) ? sdp : undefined;
  }

  async viewerAnswer(key: string, page: string, sdp: string): Promise<void> {
    await this.#viewer(key, page)?.accept(sdp);
  }

  async viewerCandidate(key: string, page: string, candidate: IceCandidateInit): Promise<void> {
    await this.#viewer(key, page)?.addCandidate(candidate);
  }

  /**
   * What a receiving page asks of the video of the unit of `key` (adaptive stream): its session
   * there gets it now, and its later sessions on that unit get it when made (the last one asked).
   * Nothing when the unit does not run here (the page asks again with the next unit's offer).
   */
  viewerVideo(key: string, page: string, wants: VideoWants): void {
    const hosted = this.#hosted.get(key);
    if (!hosted) return;
    hosted.wants.set(page, wants);
    if (hosted.viewers.has(page)) hosted.unit.setViewerVideo(page, wants);
  }

  async closeViewer(key: string, page: string): Promise<void> {
    await this.#lanes.run(`${key}\u0000${page}`, async () => {
      const hosted = this.#hosted.get(key);
      // Off the unit: what it asked goes with it.
      hosted?.wants.delete(page);
      const viewer = hosted?.viewers.get(page);
      if (!hosted || !viewer) return;
      hosted.viewers.delete(page);
      await viewer.close();
    });
  }

  /** Ends the unit of `key` here, with every session of it (its sender left or offered anew). */
  async end(key: string): Promise<void> {
    await this.#lanes.run(key, () => this.#end(key));
  }

  async #end(key: string): Promise<void> {
    const hosted = this.#hosted.get(key);
    if (!hosted) return;
    this.#hosted.delete(key);
    await hosted.unit.close();
  }

  /**
   * Ends every unit. Steps of the lanes still running or waiting end first (an offer being answered
   * ends with its unit; one that waited its turn finds the host closed), so no unit outlives this.
   * The wait is bounded (a store read that hangs): a step that ends later still makes nothing.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#endAll();
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_WAIT_MS);
      timer.unref();
    });
    await Promise.race([this.#lanes.idle(), bound]);
    clearTimeout(timer);
    await this.#endAll();
  }

  async #endAll(): Promise<void> {
    const all = [...this.#hosted.values()];
    this.#hosted.clear();
    await Promise.all(all.map((hosted) => hosted.unit.close()));
  }

  /** Whether a share of a short range is kept for another app (see UnitBudget). */
  async #reserve(): Promise<boolean> {
    return this.#deps.severalApps === undefined ? true : this.#deps.severalApps();
  }

  #viewer(key: string, page: string): ViewerSession | undefined {
    return this.#hosted.get(key)?.viewers.get(page);
  }
}

let forwardingUnit: Promise<UnitMaker> | undefined;

/** ForwardingUnit, loaded at the first unit: werift costs every start that makes no unit ~100 ms. */
function forwardingUnits(): Promise<UnitMaker> {
  forwardingUnit ??= import('./forwarding-unit.js').then(
    ({ ForwardingUnit }) =>
      (media: IceSettings, pages: PageLinks) =>
        new ForwardingUnit(media, pages),
    (error: unknown) => {
      // Not kept: a load that failed once (a file being replaced, no memory) is tried at the next unit.
      forwardingUnit = undefined;
      throw error;
    },
  );
  return forwardingUnit;
}
