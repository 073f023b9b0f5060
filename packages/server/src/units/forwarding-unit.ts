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
import { MediaRelay } from './media-relay.js';
import {
  mediaConfig,
  type PeerSession,
  Presenter,
  type PresenterSession,
  type UnitHub,
  Viewer,
  type ViewerSession,
} from './peer-sessions.js';
import type { VideoWants } from './video-wants.js';

export type { IceSettings as ForwardingUnitOptions } from './ice-settings.js';
export type { IceCandidateInit, PresenterSession, SessionEnd, ViewerSession } from './peer-sessions.js';

// A keyframe request reaches the presenter at most this often: a burst of viewers joining (or
// asking after loss) costs one keyframe, and a request inside the window is sent at its end.
const KEYFRAME_INTERVAL_MS = 500;

export class ForwardingUnit {
  // The clock rates of Opus and VP8 (mediaConfig's only codecs).
  private readonly relays = { audio: new MediaRelay(48_000), video: new MediaRelay(90_000) };
  private readonly viewers = new Map<string, Viewer>();
  private readonly hub: UnitHub;
  private presenter: Presenter | undefined;
  private keyframeTimer: NodeJS.Timeout | undefined;
  private lastKeyframeAt = 0;
  private closed = false;

  constructor(options: IceSettings) {
    const ice = iceConfig(options); // checks the addresses now, not at the first page
    const allowed = remoteAddressRule(options);
    this.hub = {
      config: () => ({ ...ice, ...mediaConfig() }),
      allowed,
      attachSource: (presenter, track) => {
        if (presenter !== this.presenter) return;
        if (track.kind === 'audio' || track.kind === 'video') this.relays[track.kind].attach(track);
      },
      requestKeyframe: () => this.requestKeyframe(),
      removePresenter: (presenter) => {
        if (presenter !== this.presenter) return;
        this.presenter = undefined;
        this.relays.audio.detach();
        this.relays.video.detach();
      },
      removeViewer: (viewer) => {
        this.relays.audio.remove(viewer.senders.audio);
        this.relays.video.remove(viewer.senders.video);
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
    return this.relays.audio.live || this.relays.video.live;
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
    this.relays.audio.add(viewer.senders.audio);
    this.relays.video.add(viewer.senders.video);
    void previous?.end('replaced');
    return viewer;
  }

  /** What a viewer's page asks of its video: at most its element's size, or none while hidden. */
  setViewerVideo(id: string, wants: VideoWants): boolean {
    return this.viewers.has(id) && wants !== undefined;
  }

  /** Ends every session; the unit can not be used again. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.keyframeTimer);
    const sessions: PeerSession[] = [...this.viewers.values()];
    if (this.presenter) sessions.push(this.presenter);
    await Promise.all(sessions.map((s) => s.end('unit-closed')));
  }

  /** Asks the presenter for a keyframe, at most once per KEYFRAME_INTERVAL_MS. */
  private requestKeyframe(): void {
    if (this.closed || this.keyframeTimer) return;
    const wait = this.lastKeyframeAt + KEYFRAME_INTERVAL_MS - Date.now();
    if (wait > 0) {
      this.keyframeTimer = setTimeout(() => {
        this.keyframeTimer = undefined;
        this.requestKeyframe();
      }, wait);
      return;
    }
    const ssrc = this.relays.video.ssrc;
    if (!this.presenter || ssrc === undefined) return;
    this.lastKeyframeAt = Date.now();
    this.presenter.requestKeyframe(ssrc);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the forwarding unit is closed');
  }
}
