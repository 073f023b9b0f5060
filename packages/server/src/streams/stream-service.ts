import { randomBytes } from 'node:crypto';
import { type AppEvent, type IceServer, STREAM_MAX_PAGES } from '@realtime/protocol';
import type { Logger } from 'pino';
import { iceServers } from '../calls/ice.js';
import type { IceConfig } from '../calls/options.js';
import type { EventSink } from '../core/events.js';
import { type NodeRegistry, SWEEP_BATCH } from '../core/node-registry.js';
import type { PageSignals } from '../core/page-signals.js';
import { nodeOfPage } from '../engines/node-id.js';
import type { StreamChange, StreamMember, StreamStore } from '../engines/types.js';
import type { IceCandidateInit } from '../units/peer-sessions.js';
import type { UnitHost } from '../units/unit-host.js';
import { type UnitSignal, viewerRefusal } from '../units/unit-signal.js';
import type { VideoWants } from '../units/video-wants.js';
import type { StreamOptions } from './options.js';

/** Node messages of streams: a watching page's requests, for the node running the stream's unit. */
const NODE_KIND = 'stream';

/** What streams use of PageSignals: frames to pages, and node messages to the node of a stream's unit. */
export type StreamSignals = Pick<PageSignals, 'toPage' | 'toNode' | 'onNodeMessage'>;

/** What streams use of the node's forwarding units. */
export type StreamUnitHost = Pick<
  UnitHost,
  | 'hosts'
  | 'present'
  | 'presenterCandidate'
  | 'openViewer'
  | 'viewerAnswer'
  | 'viewerCandidate'
  | 'viewerVideo'
  | 'closeViewer'
  | 'end'
>;

export interface StreamServiceDeps {
  node: string;
  streams: StreamStore;
  /** The node leases: the pages of a dead node leave their streams, taken by the node that claims it. */
  nodes: Pick<NodeRegistry, 'onLapse'>;
  signals: StreamSignals;
  events: EventSink;
  log: Logger;
  now: () => number;
  /** This node's forwarding units (shared with group calls). */
  units: StreamUnitHost;
  ice?: IceConfig;
  options?: StreamOptions;
}

/** What a watching page asks of the unit's node. */
type UnitRequest =
  | { op: 'open'; stream: string; page: string; restart?: boolean }
  | { op: 'close'; stream: string; page: string }
  | { op: 'answer'; stream: string; page: string; sdp: string }
  | { op: 'candidate'; stream: string; page: string; candidate: IceCandidateInit }
  | { op: 'video'; stream: string; page: string; wants: VideoWants };

/** Where a page is, per stream: its role there. */
type PageStreams = Map<string, { app: string; stream: string; role: StreamMember['role'] }>;

const keyOf = (app: string, stream: string) => `${app}\u0000${stream}`;
/** The key of a stream's unit among the node's units (group calls' units have theirs). */
const unitOf = (app: string, stream: string) => `stream\u0000${app}\u0000${stream}`;

/**
 * Live streams, the same on every node. The store keeps who is on each stream and its live runs;
 * each change it hands out is reported here once (`stream.live`, `stream.joined`, `stream.left`,
 * `stream.ended`). A stream's forwarding unit runs on its presenter's node; a watching page on
 * another node reaches it through node messages, and the unit answers the page through PageSignals.
 */
export class StreamService {
  readonly #deps: StreamServiceDeps;
  readonly #host: StreamUnitHost;
  readonly #pages = new Map<string, PageStreams>();

  constructor(deps: StreamServiceDeps) {
    this.#deps = deps;
    deps.nodes.onLapse('live streams', async ({ node }) => {
      const taken = await deps.streams.takeNode(node, deps.now(), SWEEP_BATCH);
      for (const lapsed of taken) await this.#left(lapsed.app, lapsed.stream, lapsed.member, lapsed.change);
      return taken.length < SWEEP_BATCH ? 'done' : 'more';
    });
    this.#host = deps.units;
  }

  async start(): Promise<void> {
    this.#deps.signals.onNodeMessage(NODE_KIND, (app, data) => void this.#unitRequest(app, data));
  }

  ice(iceUser: string): IceServer[] {
    return iceServers(this.#deps.ice, iceUser, this.#deps.now());
  }

  /** The page's role on the stream, when it is on it (pages here only). */
  roleOf(page: string, app: string, stream: string): StreamMember['role'] | undefined {
    return this.#pages.get(page)?.get(keyOf(app, stream))?.role;
  }

  /** How many streams a page here is on. */
  streamsOf(page: string): number {
    return this.#pages.get(page)?.size ?? 0;
  }

  /**
   * Puts a page on a stream, to present or to watch. Answers whether the stream is live (a
   * watching page then gets the unit's offer), or why not.
   */
  async join(
    app: string,
    stream: string,
    member: StreamMember,
  ): Promise<{ live: boolean; startedAt?: number } | 'taken' | 'full' | 'already'> {
    const max = this.#deps.options?.maxPages ?? STREAM_MAX_PAGES;
    const joined = await this.#deps.streams.join(app, stream, member, max, this.#deps.now());
    if (typeof joined === 'string') return joined;
    let streams = this.#pages.get(member.page);
    if (!streams) {
      streams = new Map();
      this.#pages.set(member.page, streams);
    }
    streams.set(keyOf(app, stream), { app, stream, role: member.role });
    await this.#report(app, stream, joined.change);
    const { presenter, liveSince } = joined.state;
    const live = liveSince !== undefined && presenter !== undefined;
    if (live && member.role === 'viewer') await this.#toUnit(app, presenter, { op: 'open', stream, page: member.page });
    return live ? { live, startedAt: liveSince } : { live };
  }

  /** Takes a page off a stream; false when it was not on. */
  async leave(app: string, stream: string, page: string): Promise<boolean> {
    this.#pages.get(page)?.delete(keyOf(app, stream));
    const left = await this.#deps.streams.leave(app, stream, page, this.#deps.now());
    if (!left) return false;
    await this.#left(app, stream, left.member, left.change);
    return true;
  }

  /** A page's signal for the stream's unit. Rejects with a StoreError when the store could not be read. */
  async signal(
    app: string,
    stream: string,
    page: string,
    role: StreamMember['role'],
    signal: UnitSignal,
  ): Promise<void> {
    if (role === 'presenter') {
      if ('sdp' in signal) {
        // A new offer starts a new unit: a run of the old one ends first, so the new one goes live anew.
        if (this.#host.hosts(unitOf(app, stream), page)) await this.#stopLive(app, stream, page, false);
        const answer = await this.#host.present(unitOf(app, stream), { app, page }, signal.sdp, {
          connected: () => void this.#goLive(app, stream, page),
          failed: () => void this.#stopLive(app, stream, page, true),
          // Dynacast: only the layers its viewers can use (a page gone meanwhile misses nothing).
          sendLayers: (layers) =>
            void this.#deps.signals
              .toPage(app, page, { t: 'stream.signal', stream, data: { layers } })
              .catch((error: unknown) =>
                this.#deps.log.error({ err: error, app, stream }, 'telling the presenter which layers to send failed'),
              ),
        });
        // A later offer of the page, or its leaving, overtook this one: nothing to answer.
        if (answer === undefined) return;
        await this.#deps.signals.toPage(app, page, {
          t: 'stream.signal',
          stream,
          data: { sdp: { type: 'answer', sdp: answer } },
        });
      } else if ('candidate' in signal) {
        await this.#host.presenterCandidate(unitOf(app, stream), page, signal.candidate);
      }
      return;
    }
    const { presenter, liveSince } = await this.#deps.streams.state(app, stream);
    if (presenter === undefined || liveSince === undefined) return; // nothing to watch now: the signal is stale
    const request: UnitRequest =
      'sdp' in signal
        ? { op: 'answer', stream, page, sdp: signal.sdp }
        : 'candidate' in signal
          ? { op: 'candidate', stream, page, candidate: signal.candidate }
          : 'video' in signal
            ? { op: 'video', stream, page, wants: signal.video }
            : { op: 'open', stream, page, restart: true };
    await this.#toUnit(app, presenter, request);
  }

  /** A page closed: it leaves each of its streams. */
  async pageClosed(app: string, page: string): Promise<void> {
    const streams = this.#pages.get(page);
    this.#pages.delete(page);
    for (const { stream } of streams?.values() ?? []) {
      try {
        const left = await this.#deps.streams.leave(app, stream, page, this.#deps.now());
        if (left) await this.#left(app, stream, left.member, left.change);
      } catch (error) {
        this.#deps.log.error({ err: error, app, stream }, 'taking a closed page off its stream failed');
      }
    }
  }

  async close(): Promise<void> {}

  /** A page is off the stream: report it; a presenter's unit ends, a viewer's session closes. */
  async #left(app: string, stream: string, member: StreamMember, change: StreamChange): Promise<void> {
    await this.#report(app, stream, change);
    if (member.role === 'presenter') {
      await this.#host.end(unitOf(app, stream));
      if (change.ended) await this.#tellAll(app, stream, { t: 'stream.ended', stream });
      return;
    }
    try {
      const { presenter } = await this.#deps.streams.state(app, stream);
      if (presenter !== undefined) await this.#toUnit(app, presenter, { op: 'close', stream, page: member.page });
    } catch (error) {
      this.#deps.log.error({ err: error, app, stream }, 'closing a viewer session failed');
    }
  }

  /** The presenter's media connected: a new live run; every page hears, watching pages get offers. */
  async #goLive(app: string, stream: string, page: string): Promise<void> {
    try {
      const run = randomBytes(6).toString('base64url');
      const change = await this.#deps.streams.goLive(app, stream, page, run, this.#deps.now());
      if (!change || change.live === undefined) return;
      await this.#report(app, stream, change);
      const members = await this.#deps.streams.members(app, stream);
      await this.#tell(app, members, { t: 'stream.live', stream, started_at: change.live });
      await Promise.all(
        members
          .filter((member) => member.role === 'viewer')
          .map((member) =>
            this.#openViewer(app, stream, member.page, false).catch((error: unknown) => {
              this.#deps.log.error({ err: error, app, stream }, 'opening a viewer session failed');
            }),
          ),
      );
    } catch (error) {
      this.#deps.log.error({ err: error, app, stream }, 'a stream could not go live');
    }
  }

  /** The presenter's media failed (or it offers anew): the run ends; the presenter stays and may offer again. */
  async #stopLive(app: string, stream: string, page: string, failed: boolean): Promise<void> {
    try {
      const change = await this.#deps.streams.stopLive(app, stream, page, this.#deps.now());
      if (change) await this.#report(app, stream, change);
      const ended = { t: 'stream.ended', stream };
      if (change) await this.#tellAll(app, stream, ended);
      // Failed before it went live: only the presenter has something to learn.
      else if (failed) await this.#deps.signals.toPage(app, page, ended);
    } catch (error) {
      this.#deps.log.error({ err: error, app, stream }, 'ending a failed live run failed');
    }
  }

  /** A request for the unit of the stream presented from `presenter`: here, or on its node. */
  async #toUnit(app: string, presenter: string, request: UnitRequest): Promise<void> {
    await this.#deps.signals.toNode(app, nodeOfPage(presenter), NODE_KIND, request);
  }

  async #unitRequest(app: string, data: string): Promise<void> {
    try {
      const request = JSON.parse(data) as UnitRequest;
      const { stream, page } = request;
      const unit = unitOf(app, stream);
      if (request.op === 'open') await this.#openViewer(app, stream, page, request.restart === true);
      else if (request.op === 'close') await this.#host.closeViewer(unit, page);
      else if (request.op === 'answer') await this.#host.viewerAnswer(unit, page, request.sdp);
      else if (request.op === 'video') this.#host.viewerVideo(unit, page, request.wants);
      else await this.#host.viewerCandidate(unit, page, request.candidate);
    } catch (error) {
      // A page's bad answer or candidate fails its own session only.
      this.#deps.log.warn({ err: error, app }, 'a viewer request to a forwarding unit failed');
    }
  }

  /**
   * A viewer session for a watching page, and the unit's offer to it; refused for want of a port or
   * by a bound, the page gets `error` `unavailable` naming the stream instead (it may ask again).
   */
  async #openViewer(app: string, stream: string, page: string, restart: boolean): Promise<void> {
    let sdp: string | undefined;
    try {
      sdp = await this.#host.openViewer(unitOf(app, stream), page, restart);
    } catch (error) {
      const refusal = viewerRefusal(error);
      if (!refusal) throw error;
      const where = { err: error, app, stream, page };
      if (refusal.operator) this.#deps.log.error(where, 'a forwarding unit could not start a session');
      else this.#deps.log.warn(where, 'a viewer session was refused by a bound of the forwarding units');
      const message = `stream.signal: ${refusal.message}`;
      await this.#deps.signals.toPage(app, page, { t: 'error', code: refusal.code, message, stream });
      return;
    }
    if (sdp === undefined) return;
    await this.#deps.signals.toPage(app, page, { t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp } } });
  }

  /** Records a change's webhook events in their order; a failure is logged, the rest still go. */
  async #report(app: string, stream: string, change: StreamChange): Promise<void> {
    const events: AppEvent[] = [];
    if (change.live !== undefined) events.push({ type: 'stream.live', stream, started_at: change.live });
    for (const w of change.joined) {
      events.push({ type: 'stream.joined', stream, user: w.user, role: w.role, watch: w.watch, joined_at: w.joinedAt });
    }
    for (const w of change.left) {
      events.push({
        type: 'stream.left',
        stream,
        user: w.user,
        role: w.role,
        watch: w.watch,
        joined_at: w.joinedAt,
        left_at: w.leftAt,
        seconds: Math.max(0, Math.floor((w.leftAt - w.joinedAt) / 1000)),
      });
    }
    if (change.ended) {
      events.push({ type: 'stream.ended', stream, started_at: change.ended.startedAt, ended_at: change.ended.endedAt });
    }
    for (const event of events) {
      try {
        await this.#deps.events.record(app, event);
      } catch (error) {
        this.#deps.log.error({ err: error, app, stream, type: event.type }, 'recording a stream event failed');
      }
    }
  }

  async #tellAll(app: string, stream: string, frame: object): Promise<void> {
    await this.#tell(app, await this.#deps.streams.members(app, stream), frame);
  }

  /** One frame to each page; failures are logged, the others still get it. */
  async #tell(app: string, members: readonly StreamMember[], frame: object): Promise<void> {
    const sent = await Promise.allSettled(members.map((m) => this.#deps.signals.toPage(app, m.page, frame)));
    for (const result of sent) {
      if (result.status === 'rejected') this.#deps.log.error({ err: result.reason, app }, 'a stream frame was lost');
    }
  }
}
