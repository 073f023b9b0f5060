/**
 * The forwarding units of the streams presented from this node's pages: one unit per presenter's
 * offer (a new offer starts a new unit), with the viewer sessions of every watching page, wherever
 * that page is. The host speaks WebRTC; what a stream is and who may do what is StreamService's.
 */
import type { Logger } from 'pino';
import { ForwardingUnit } from './forwarding-unit.js';
import type { IceSettings } from './ice-settings.js';
import type { IceCandidateInit, PresenterSession, SessionEnd, ViewerSession } from './peer-sessions.js';

export interface UnitHostDeps {
  media: IceSettings;
  /** A session whose media has not connected by then ends as failed. */
  connectTimeoutMs: number;
  log: Logger;
  /** A frame for a page, wherever it is; may reject (logged). */
  toPage(app: string, page: string, frame: object): Promise<void>;
  /** The presenter's media connected: the stream may go live. */
  presenterConnected(app: string, stream: string, page: string): void;
  /** The presenter's media failed or never connected (not when the host ended it on purpose). */
  presenterFailed(app: string, stream: string, page: string): void;
}

interface Hosted {
  app: string;
  stream: string;
  presenterPage: string;
  unit: ForwardingUnit;
  presenter: PresenterSession;
  viewers: Map<string, ViewerSession>;
}

const keyOf = (app: string, stream: string) => `${app}\u0000${stream}`;

export class UnitHost {
  readonly #deps: UnitHostDeps;
  readonly #hosted = new Map<string, Hosted>();

  constructor(deps: UnitHostDeps) {
    this.#deps = deps;
  }

  /** How many units run here, and how many viewer sessions they hold. */
  get size(): { units: number; viewers: number } {
    let viewers = 0;
    for (const hosted of this.#hosted.values()) viewers += hosted.viewers.size;
    return { units: this.#hosted.size, viewers };
  }

  /** Whether the stream's unit runs here for this presenter page. */
  hosts(app: string, stream: string, presenterPage: string): boolean {
    return this.#hosted.get(keyOf(app, stream))?.presenterPage === presenterPage;
  }

  /**
   * The presenter's offer: a new unit takes it (an earlier unit of the stream ends, with its
   * viewers: they get the new unit's offers when it is live). Answers the unit's answer.
   */
  async present(app: string, stream: string, page: string, offerSdp: string): Promise<string> {
    await this.end(app, stream);
    const unit = new ForwardingUnit(this.#deps.media);
    const presenter = unit.createPresenter(page);
    const hosted: Hosted = { app, stream, presenterPage: page, unit, presenter, viewers: new Map() };
    this.#hosted.set(keyOf(app, stream), hosted);
    const timer = setTimeout(() => void presenter.close(), this.#deps.connectTimeoutMs);
    timer.unref();
    presenter.onConnected(() => {
      clearTimeout(timer);
      this.#deps.presenterConnected(app, stream, page);
    });
    presenter.onEnded((reason: SessionEnd) => {
      clearTimeout(timer);
      // Ended by the host (left, replaced, closed): the service knows. Anything else is a failure.
      if (this.#hosted.get(keyOf(app, stream)) !== hosted) return;
      this.#hosted.delete(keyOf(app, stream));
      void unit.close();
      if (reason !== 'unit-closed') this.#deps.presenterFailed(app, stream, page);
    });
    try {
      return await presenter.answer(offerSdp);
    } catch (error) {
      await this.end(app, stream);
      throw error;
    }
  }

  async presenterCandidate(app: string, stream: string, page: string, candidate: IceCandidateInit): Promise<void> {
    const hosted = this.#hosted.get(keyOf(app, stream));
    if (hosted?.presenterPage === page) await hosted.presenter.addCandidate(candidate);
  }

  /**
   * Opens a viewer session for a watching page and sends it the unit's offer. A page that has one
   * keeps it, unless `restart` (its media failed): then a new one replaces it.
   */
  async openViewer(app: string, stream: string, page: string, restart: boolean): Promise<void> {
    const hosted = this.#hosted.get(keyOf(app, stream));
    if (!hosted) return;
    const existing = hosted.viewers.get(page);
    if (existing && !restart) return;
    const viewer = hosted.unit.createViewer(page);
    hosted.viewers.set(page, viewer);
    const timer = setTimeout(() => void viewer.close(), this.#deps.connectTimeoutMs);
    timer.unref();
    viewer.onConnected(() => clearTimeout(timer));
    viewer.onEnded(() => {
      clearTimeout(timer);
      if (hosted.viewers.get(page) === viewer) hosted.viewers.delete(page);
    });
    const sdp = await viewer.offer();
    if (viewer !== hosted.viewers.get(page)) return;
    await this.#deps.toPage(app, page, { t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp } } });
  }

  async viewerAnswer(app: string, stream: string, page: string, sdp: string): Promise<void> {
    await this.#viewer(app, stream, page)?.accept(sdp);
  }

  async viewerCandidate(app: string, stream: string, page: string, candidate: IceCandidateInit): Promise<void> {
    await this.#viewer(app, stream, page)?.addCandidate(candidate);
  }

  async closeViewer(app: string, stream: string, page: string): Promise<void> {
    const hosted = this.#hosted.get(keyOf(app, stream));
    const viewer = hosted?.viewers.get(page);
    if (!hosted || !viewer) return;
    hosted.viewers.delete(page);
    await viewer.close();
  }

  /** Ends the stream's unit here, with every session of it (the presenter left or offered anew). */
  async end(app: string, stream: string): Promise<void> {
    const hosted = this.#hosted.get(keyOf(app, stream));
    if (!hosted) return;
    this.#hosted.delete(keyOf(app, stream));
    await hosted.unit.close();
  }

  async close(): Promise<void> {
    const all = [...this.#hosted.values()];
    this.#hosted.clear();
    await Promise.all(all.map((hosted) => hosted.unit.close()));
  }

  #viewer(app: string, stream: string, page: string): ViewerSession | undefined {
    return this.#hosted.get(keyOf(app, stream))?.viewers.get(page);
  }
}
