/**
 * The forwarding units of group calls in unit mode: each page of the group sends its media once, to
 * a unit on its own node, and every other page receives it from there. A page's own signals reach
 * its unit here at once (its socket is on this node); the other pages' answers and candidates for
 * that unit reach its node as node messages, and the unit's offers go back to them through
 * PageSignals, as `group.signal` with `from` the sending page.
 */
import type { Logger } from 'pino';
import type { PageSignals } from '../core/page-signals.js';
import { nodeOfPage } from '../engines/node-id.js';
import type { IceCandidateInit } from '../units/peer-sessions.js';
import type { UnitHost } from '../units/unit-host.js';
import { type UnitSignal, viewerRefusal } from '../units/unit-signal.js';
import type { VideoWants } from '../units/video-wants.js';

/** Node messages of group calls: a page's requests for the unit of another page, on that page's node. */
const NODE_KIND = 'group';

/** What group calls use of PageSignals: frames to pages, and node messages to the node of a page's unit. */
export type GroupSignals = Pick<PageSignals, 'toPage' | 'toNode' | 'onNodeMessage'>;

/** What group calls use of the node's forwarding units. */
export type GroupUnitHost = Pick<
  UnitHost,
  | 'present'
  | 'presenterCandidate'
  | 'openViewer'
  | 'viewerAnswer'
  | 'viewerCandidate'
  | 'viewerVideo'
  | 'closeViewer'
  | 'end'
>;

export interface GroupUnitsDeps {
  units: GroupUnitHost;
  signals: GroupSignals;
  log: Logger;
  /** The pages in the group now (on any node). */
  pages(app: string, group: string): Promise<string[]>;
}

/** What a receiving page asks of a sending page's unit. */
type UnitRequest =
  | { op: 'open'; group: string; sender: string; page: string; restart?: boolean }
  | { op: 'close'; group: string; sender: string; page: string }
  | { op: 'answer'; group: string; sender: string; page: string; sdp: string }
  | { op: 'candidate'; group: string; sender: string; page: string; candidate: IceCandidateInit }
  | { op: 'video'; group: string; sender: string; page: string; wants: VideoWants };

/** The key of a group page's unit among the node's units (streams' units have theirs). */
const unitOf = (app: string, group: string, sender: string) => `group\u0000${app}\u0000${group}\u0000${sender}`;

export class GroupUnits {
  readonly #deps: GroupUnitsDeps;

  constructor(deps: GroupUnitsDeps) {
    this.#deps = deps;
  }

  start(): void {
    this.#deps.signals.onNodeMessage(NODE_KIND, (app, data) => void this.#request(app, data));
  }

  /**
   * A signal of a page here for its own unit: an offer starts a new unit (the last one's viewers get
   * the new unit's offers once it connects), whose answer goes back to the page; candidates follow.
   */
  async send(app: string, group: string, page: string, signal: UnitSignal): Promise<void> {
    const key = unitOf(app, group, page);
    if ('sdp' in signal) {
      const answer = await this.#deps.units.present(key, { app, page }, signal.sdp, {
        connected: () => void this.#connected(app, group, page),
        failed: () => void this.#failed(app, group, page),
        // Dynacast: only the layers the others can use (a page gone meanwhile misses nothing).
        sendLayers: (layers) =>
          void this.#deps.signals
            .toPage(app, page, { t: 'group.signal', group, from: page, data: { layers } })
            .catch((error: unknown) =>
              this.#deps.log.error({ err: error, app, group }, 'telling a group page which layers to send failed'),
            ),
      });
      // A later offer of the page, or its leaving, overtook this one: nothing to answer.
      if (answer === undefined) return;
      await this.#deps.signals.toPage(app, page, {
        t: 'group.signal',
        group,
        from: page,
        data: { sdp: { type: 'answer', sdp: answer } },
      });
    } else if ('candidate' in signal) {
      await this.#deps.units.presenterCandidate(key, page, signal.candidate);
    }
  }

  /**
   * A signal of `page` for the unit of `sender` (an answer, a candidate, a restart, or what it wants
   * of the sender's video): to the sender's node.
   */
  async receive(app: string, group: string, sender: string, page: string, signal: UnitSignal): Promise<void> {
    const request: UnitRequest =
      'sdp' in signal
        ? { op: 'answer', group, sender, page, sdp: signal.sdp }
        : 'candidate' in signal
          ? { op: 'candidate', group, sender, page, candidate: signal.candidate }
          : 'video' in signal
            ? { op: 'video', group, sender, page, wants: signal.video }
            : { op: 'open', group, sender, page, restart: true };
    await this.#toUnit(app, sender, request);
  }

  /** A page joined a group in unit mode: each page there offers it its media, once its unit is up. */
  async joined(app: string, group: string, page: string, senders: readonly string[]): Promise<void> {
    await this.#each(senders, (sender) => this.#toUnit(app, sender, { op: 'open', group, sender, page }));
  }

  /** A page is out of the group: its unit ends (when it runs here), its sessions on the others' units close. */
  async left(app: string, group: string, page: string, others: readonly string[]): Promise<void> {
    await this.#deps.units.end(unitOf(app, group, page));
    await this.#each(others, (sender) => this.#toUnit(app, sender, { op: 'close', group, sender, page }));
  }

  /** The sender's media reached its unit: every other page of the group gets the unit's offer. */
  async #connected(app: string, group: string, sender: string): Promise<void> {
    try {
      const pages = await this.#deps.pages(app, group);
      await this.#each(
        pages.filter((page) => page !== sender),
        (page) => this.#openViewer(app, group, sender, page, false),
      );
    } catch (error) {
      this.#deps.log.error({ err: error, app, group }, 'offering a group page its peer’s media failed');
    }
  }

  /** The sender's media failed at its unit: the page offers again. */
  async #failed(app: string, group: string, sender: string): Promise<void> {
    try {
      await this.#deps.signals.toPage(app, sender, { t: 'group.signal', group, from: sender, data: { restart: true } });
    } catch (error) {
      this.#deps.log.error({ err: error, app, group }, 'telling a group page its media failed at its unit failed');
    }
  }

  /**
   * A session for `page` on the unit of `sender`, and the unit's offer to it; refused for want of a
   * port or by a bound, the page gets `error` `unavailable` naming the group and `from` the sender.
   */
  async #openViewer(app: string, group: string, sender: string, page: string, restart: boolean): Promise<void> {
    let sdp: string | undefined;
    try {
      sdp = await this.#deps.units.openViewer(unitOf(app, group, sender), page, restart);
    } catch (error) {
      const refusal = viewerRefusal(error);
      if (!refusal) throw error;
      const where = { err: error, app, group, page };
      if (refusal.operator) this.#deps.log.error(where, 'a forwarding unit could not start a session');
      else this.#deps.log.warn(where, 'a group page’s session was refused by a bound of the forwarding units');
      const message = `group.signal: ${refusal.message}`;
      await this.#deps.signals.toPage(app, page, { t: 'error', code: refusal.code, message, group, from: sender });
      return;
    }
    if (sdp === undefined) return;
    await this.#deps.signals.toPage(app, page, {
      t: 'group.signal',
      group,
      from: sender,
      data: { sdp: { type: 'offer', sdp } },
    });
  }

  /** A request for the unit of `sender`: here, or on its node. */
  async #toUnit(app: string, sender: string, request: UnitRequest): Promise<void> {
    await this.#deps.signals.toNode(app, nodeOfPage(sender), NODE_KIND, request);
  }

  async #request(app: string, data: string): Promise<void> {
    try {
      const request = JSON.parse(data) as UnitRequest;
      const { group, sender, page } = request;
      const key = unitOf(app, group, sender);
      if (request.op === 'open') await this.#openViewer(app, group, sender, page, request.restart === true);
      else if (request.op === 'close') await this.#deps.units.closeViewer(key, page);
      else if (request.op === 'answer') await this.#deps.units.viewerAnswer(key, page, request.sdp);
      else if (request.op === 'video') this.#deps.units.viewerVideo(key, page, request.wants);
      else await this.#deps.units.viewerCandidate(key, page, request.candidate);
    } catch (error) {
      // A page's bad answer or candidate fails its own session only.
      this.#deps.log.warn({ err: error, app }, 'a request to a group page’s unit failed');
    }
  }

  /** One step per item, all at once; failures are logged, the others still go. */
  async #each(items: readonly string[], step: (item: string) => Promise<void>): Promise<void> {
    const done = await Promise.allSettled(items.map(step));
    for (const result of done) {
      if (result.status === 'rejected') this.#deps.log.error({ err: result.reason }, 'a group unit request was lost');
    }
  }
}
