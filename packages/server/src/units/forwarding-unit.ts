/**
 * The selective forwarding unit of one live stream: one presenter's browser sends its camera and
 * microphone here, and every viewer's browser receives the same packets from here (no decoding, no
 * mixing). Signalling is the caller's: it carries SDP and ICE candidates between the pages and
 * these sessions. Built on werift (WebRTC in TypeScript).
 *
 * Offers and answers made here already carry all the unit's candidates (host candidates on the
 * configured addresses, gathered before the SDP is returned), so candidates only flow in.
 */
import { type IceSettings, iceConfig, remoteAddressRule } from './ice-settings.js';
import { LayerDemand } from './layer-demand.js';
import { MediaRelay } from './media-relay.js';
import { PageLinks } from './page-link.js';
import {
  mediaConfig,
  type PeerSession,
  Presenter,
  type PresenterSession,
  type UnitHub,
  Viewer,
  type ViewerSession,
} from './peer-sessions.js';
import { SimulcastSource } from './simulcast-source.js';
import { VideoOutput } from './video-output.js';
import type { VideoWants } from './video-wants.js';

export type { IceSettings as ForwardingUnitOptions } from './ice-settings.js';
export type { IceCandidateInit, PresenterSession, SessionEnd, ViewerSession } from './peer-sessions.js';
export type { VideoWants } from './video-wants.js';

/** How often each viewer's layer is chosen again (ms): a shrinking link is followed within this. */
const ALLOCATE_INTERVAL_MS = 250;
/** VP8's RTP clock (Hz). */
const VIDEO_CLOCK_RATE = 90_000;

export class ForwardingUnit {
  // Opus's clock rate (mediaConfig's only audio codec).
  private readonly audio = new MediaRelay(48_000);
  private readonly video: SimulcastSource;
  private readonly outputs = new Map<Viewer, VideoOutput>();
  private readonly viewers = new Map<string, Viewer>();
  private readonly hub: UnitHub;
  private presenter: Presenter | undefined;
  private allocateTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly demand = new LayerDemand();
  private sendLayersListener: ((count: number) => void) | undefined;

  /**
   * @param pages the receiving pages' links on this node (shared by its units: a page receiving
   * several units' video takes it through one link); the unit's own when not given.
   */
  constructor(
    options: IceSettings,
    private readonly pages: PageLinks = new PageLinks(),
  ) {
    const ice = iceConfig(options); // checks the addresses now, not at the first page
    const allowed = remoteAddressRule(options);
    this.video = new SimulcastSource(
      (packet) => {
        for (const output of this.outputs.values()) output.forward(packet);
      },
      (ssrc) => this.presenter?.requestKeyframe(ssrc),
    );
    this.hub = {
      config: () => ({ ...ice, ...mediaConfig() }),
      allowed,
      attachSource: (presenter, track, receiver) => {
        if (presenter !== this.presenter) return;
        if (track.kind === 'audio') this.audio.attach(track);
        else if (track.kind === 'video') {
          this.video.attach(receiver, track);
          this.startAllocating();
        }
      },
      requestKeyframe: (viewer) => this.outputs.get(viewer)?.pictureLost(),
      viewerConnected: (viewer) => this.outputs.get(viewer)?.connected(),
      removePresenter: (presenter) => {
        if (presenter !== this.presenter) return;
        this.presenter = undefined;
        this.audio.detach();
        this.video.detach();
        this.stopAllocating();
      },
      removeViewer: (viewer) => {
        this.audio.remove(viewer.senders.audio);
        this.outputs.get(viewer)?.close();
        this.outputs.delete(viewer);
        if (this.viewers.get(viewer.id) === viewer) this.viewers.delete(viewer.id);
      },
    };
  }

  /** How many viewer sessions are open (connected or still connecting). */
  get viewerCount(): number {
    return this.viewers.size;
  }

  /** Whether a presenter's media is being forwarded (a presenter session with tracks). */
  get live(): boolean {
    return this.audio.live || this.video.live;
  }

  /**
   * What a viewer's page asks of its video: at most its element's size, or none while hidden. The
   * layer follows at the next choice (within ALLOCATE_INTERVAL_MS and the new layer's keyframe).
   */
  setViewerVideo(id: string, wants: VideoWants): boolean {
    const viewer = this.viewers.get(id);
    const output = viewer && this.outputs.get(viewer);
    if (!output) return false;
    output.want(wants);
    return true;
  }

  /** Each viewer's layers (forwarded now, chosen) and estimate, by viewer id: for tests and stats. */
  videoLayers(): Map<
    string,
    { current: number | undefined; target: number | undefined; estimate: number | undefined }
  > {
    const out = new Map<
      string,
      { current: number | undefined; target: number | undefined; estimate: number | undefined }
    >();
    for (const [id, viewer] of this.viewers) {
      const output = this.outputs.get(viewer);
      if (output) out.set(id, { ...output.layers, estimate: output.estimate });
    }
    return out;
  }

  /**
   * Dynacast: `listener` hears how many of its lowest layers the presenter should send, whenever
   * that changes (LayerDemand); the caller tells the presenter's page.
   */
  onSendLayers(listener: (count: number) => void): void {
    this.sendLayersListener = listener;
  }

  /** A presenter session; one at a time, so an earlier presenter ends ('replaced'). */
  createPresenter(id: string): PresenterSession {
    this.assertOpen();
    const previous = this.presenter;
    const presenter = new Presenter(id, this.hub);
    this.presenter = presenter;
    void previous?.end('replaced');
    return presenter;
  }

  /**
   * A viewer session; it may start before the presenter does and gets the media whenever there is
   * some. A second session with the same id ends the first ('replaced').
   */
  createViewer(id: string): ViewerSession {
    this.assertOpen();
    const previous = this.viewers.get(id);
    const viewer = new Viewer(id, this.hub);
    this.viewers.set(id, viewer);
    this.audio.add(viewer.senders.audio);
    this.outputs.set(
      viewer,
      new VideoOutput(
        viewer.senders.video,
        VIDEO_CLOCK_RATE,
        (layer) => this.video.requestKeyframe(layer),
        undefined,
        this.pages.join(id),
      ),
    );
    void previous?.end('replaced');
    return viewer;
  }

  /** Ends every session; the unit can not be used again. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopAllocating();
    const sessions: PeerSession[] = [...this.viewers.values()];
    if (this.presenter) sessions.push(this.presenter);
    await Promise.all(sessions.map((s) => s.end('unit-closed')));
  }

  /** Chooses each viewer's layer every ALLOCATE_INTERVAL_MS while the presenter's video comes. */
  private startAllocating(): void {
    if (this.allocateTimer || this.closed) return;
    this.allocateTimer = setInterval(() => {
      const layers = this.video.states();
      for (const output of this.outputs.values()) output.allocate(layers);
      const wants = [...this.outputs.values()].map((output) => output.wanted);
      const count = this.demand.update(layers, wants, performance.now());
      if (count !== undefined) this.sendLayersListener?.(count);
    }, ALLOCATE_INTERVAL_MS);
    this.allocateTimer.unref();
  }

  private stopAllocating(): void {
    clearInterval(this.allocateTimer);
    this.allocateTimer = undefined;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the forwarding unit is closed');
  }
}
