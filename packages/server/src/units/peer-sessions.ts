/**
 * The forwarding unit's two kinds of peer connection: the presenter's (receives audio and video)
 * and each viewer's (sends them). They reach the unit only through `UnitHub`.
 */
import {
  MediaStream,
  type MediaStreamTrack,
  RTCPeerConnection,
  type RTCPeerConnectionConfig,
  RTCRtpCodecParameters,
  type RTCRtpReceiver,
  type RTCRtpSender,
  useAbsSendTime,
  useAudioLevelIndication,
  useNACK,
  usePLI,
  useREMB,
  useSdesMid,
  useSdesRTPStreamId,
  useTransportWideCC,
  useTWCC,
} from 'werift';
import './dtls-hello-verify.js';
import { candidateAddress, filterSdpCandidates } from './ice-settings.js';
import { NoMediaPortError, SessionClosedError } from './session-errors.js';
import { withStartBitrate } from './start-bitrate.js';
import { TransportFeedback } from './transport-feedback.js';

// Kept here too: the errors' own file holds no werift, so the unit host and signals load without it.
export { NoMediaPortError, SessionClosedError } from './session-errors.js';

/** An ICE candidate as a page's RTCPeerConnection gives it (JSON of RTCIceCandidate). */
export interface IceCandidateInit {
  candidate: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
  usernameFragment?: string | null;
}

/** Why a session ended. */
export type SessionEnd = 'closed' | 'replaced' | 'failed' | 'unit-closed';

export interface Session {
  readonly id: string;
  /** Adds a candidate the page trickled; one with a refused address is dropped silently. */
  addCandidate(candidate: IceCandidateInit): Promise<void>;
  /** Called once when the session ends, however it ends. */
  onEnded(listener: (reason: SessionEnd) => void): void;
  /** Called once when its media connects (ICE and DTLS up). */
  onConnected(listener: () => void): void;
  close(): Promise<void>;
}

export interface PresenterSession extends Session {
  /** Takes the presenter page's offer (audio and/or video, sendonly) and gives the answer. */
  answer(offerSdp: string): Promise<string>;
}

export interface ViewerSession extends Session {
  /** The offer for the viewer page: one audio and one video track, sendonly, in one stream. */
  offer(): Promise<string>;
  /** Takes the viewer page's answer to `offer()`. */
  accept(answerSdp: string): Promise<void>;
}

/** What a session needs of its unit. */
export interface UnitHub {
  /** Peer connection settings (ICE and media), fresh for each connection. */
  config(): RTCPeerConnectionConfig;
  allowed(address: string): boolean;
  attachSource(presenter: Presenter, track: MediaStreamTrack, receiver: RTCRtpReceiver): void;
  /** A viewer lost its decoder's place: it needs a keyframe of its layer. */
  requestKeyframe(viewer: Viewer): void;
  /** A viewer's media connected: packets reach it from now on. */
  viewerConnected(viewer: Viewer): void;
  removePresenter(presenter: Presenter): void;
  removeViewer(viewer: Viewer): void;
}

type RtcpFeedback = ReturnType<typeof useNACK>;

/**
 * Opus and VP8 only, which every browser sends and decodes, VP8 with NACK, PLI and `feedback`.
 * werift writes payload types into these objects, so each peer connection gets its own.
 */
function codecs(...feedback: RtcpFeedback[]): NonNullable<RTCPeerConnectionConfig['codecs']> {
  return {
    audio: [new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48_000, channels: 2 })],
    video: [
      new RTCRtpCodecParameters({
        mimeType: 'video/VP8',
        clockRate: 90_000,
        rtcpFeedback: [useNACK(), usePLI(), ...feedback],
      }),
    ],
  };
}

/** The media every connection shares; no header extensions (the presenter's and the viewers' configs add theirs). */
export function mediaConfig(): RTCPeerConnectionConfig {
  return { codecs: codecs(), headerExtensions: { audio: [], video: [] }, bundlePolicy: 'max-bundle' };
}

/**
 * The presenter's media: as {@link mediaConfig}, plus
 * - transport-wide congestion control on video (the `transport-cc` feedback and its header
 *   extension), so the presenter's browser learns from the unit's feedback what the path carries
 *   and ramps its send rate to it. Video only: the audio then carries no transport sequence
 *   numbers, and the video's run without gaps;
 * - the mid and rid header extensions on video, without which a browser cannot send simulcast
 *   layers (werift routes each layer's packets to its track by rid). No RTX: werift cannot pair it
 *   with simulcast layers (werift issue #96);
 * - the audio level on audio, passed on to the viewers.
 */
export function presenterMediaConfig(): Partial<RTCPeerConnectionConfig> {
  return {
    codecs: codecs(useTWCC()),
    headerExtensions: {
      audio: [useAudioLevelIndication()],
      video: [useSdesMid(), useSdesRTPStreamId(), useTransportWideCC()],
    },
  };
}

/**
 * A viewer's media: as {@link mediaConfig}, plus on video transport-wide congestion control (the
 * unit numbers each packet, the viewer's browser says when each arrived, and the unit's
 * SendSideEstimate reads its downlink from that, queueing included), and REMB (`goog-remb` with
 * abs-send-time) for a browser that does not send transport-wide feedback; so the unit picks the
 * layer that fits. The audio level on audio. Audio carries no transport numbers: the estimate is
 * the video's.
 */
export function viewerMediaConfig(): Partial<RTCPeerConnectionConfig> {
  return {
    codecs: codecs(useREMB(), useTWCC()),
    headerExtensions: {
      audio: [useAudioLevelIndication()],
      video: [useAbsSendTime(), useTransportWideCC()],
    },
  };
}

/** How often the unit sends transport-wide feedback to a presenter (Chromium's own receivers: 50-250 ms). */
const FEEDBACK_INTERVAL_MS = 50;

type RtcpPacket = Parameters<RTCRtpReceiver['dtlsTransport']['sendRtcp']>[0][number];

const TRANSPORT_CC_URI = 'http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01';

/**
 * Sends transport-wide feedback for every packet the presenter's connection gets, every
 * FEEDBACK_INTERVAL_MS while any arrived, until the returned stop is called (or werift stops the
 * receiver). `extensionId` is the transport-cc id negotiated with the presenter.
 *
 * Packets are counted as the transport decrypts them, not as werift routes them to a track: a
 * browser sending simulcast sends its probes (padding) on layers it does not send yet, which
 * werift cannot route, and feedback must not call those lost
 * (seen in Chromium's getStats). werift's own feedback maker errs (see
 * transport-feedback.ts) and is made only while the receiver's `receiverTWCC` slot is empty: this
 * fills the slot with one that takes nothing.
 */
function sendTransportFeedback(receiver: RTCRtpReceiver, extensionId: number): () => void {
  const feedback = new TransportFeedback(receiver.rtcpSsrc);
  // The feedback names one of the browser's own SSRCs, or Chromium drops it (and, hearing nothing,
  // cuts its rate by a fifth every second): a simulcast layer's is known only from its packets.
  let mediaSsrc = 0;
  const timer = setInterval(() => {
    const packet = feedback.take(mediaSsrc);
    // sendRtcp only serializes what it is given; werift's own classes have no transport-cc builder to use.
    const rtcp = { serialize: () => packet } as unknown as RtcpPacket;
    if (packet) receiver.dtlsTransport.sendRtcp([rtcp]).catch(noop);
  }, FEEDBACK_INTERVAL_MS);
  timer.unref();
  const { unSubscribe } = receiver.dtlsTransport.onRtp.subscribe((rtp) => {
    for (const extension of rtp.header.extensions) {
      if (extension.id === extensionId && extension.payload.length >= 2) {
        mediaSsrc = rtp.header.ssrc;
        feedback.received(extension.payload.readUInt16BE(0), performance.now() * 1000);
        return;
      }
    }
  });
  const stop = (): void => {
    clearInterval(timer);
    unSubscribe();
  };
  const slot = {
    handleTWCC: noop,
    // werift sets this false when the receiver stops.
    set twccRunning(running: boolean) {
      if (!running) stop();
    },
  };
  receiver.receiverTWCC = slot as unknown as NonNullable<RTCRtpReceiver['receiverTWCC']>;
  return stop;
}

/**
 * How long an ending session waits for a description being made. Host candidates only are
 * gathered (binding one socket), so this is never reached but for a fault in werift; the session
 * ends all the same then.
 */
const SETUP_WAIT_MS = 5000;

/** Waits for `step` to settle, at most `ms`. */
async function settledWithin(step: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([step.then(noop, noop), late]);
  clearTimeout(timer);
}

const noop = (): void => undefined;

/** What both kinds share: the peer connection, candidate intake and the end. */
export abstract class PeerSession implements Session {
  protected readonly pc: RTCPeerConnection;
  private readonly listeners: Array<(reason: SessionEnd) => void> = [];
  private connectedListeners: Array<() => void> | undefined = [];
  private ended = false;
  /**
   * The description steps in flight, one after another. werift binds the UDP socket during
   * setLocalDescription and adds it to the connection's sockets only once bound: a close meanwhile
   * closes those there are, and the one bound after it is never released. So the end waits for this.
   */
  private setup: Promise<unknown> = Promise.resolve();

  /** @param media codecs and header extensions in place of the hub's. */
  constructor(
    readonly id: string,
    protected readonly hub: UnitHub,
    media: Partial<RTCPeerConnectionConfig> = {},
  ) {
    this.pc = new RTCPeerConnection({ ...hub.config(), ...media });
    this.pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected' && !this.ended) {
        this.connected();
        const listeners = this.connectedListeners ?? [];
        this.connectedListeners = undefined;
        for (const listener of listeners) listener();
      }
      // werift's ICE does not come back from "failed"; a page that wants back starts anew.
      if (state === 'failed') void this.end('failed');
    });
  }

  async addCandidate(candidate: IceCandidateInit): Promise<void> {
    const address = candidateAddress(candidate.candidate);
    if (this.ended || address === undefined || !this.hub.allowed(address)) return;
    await this.pc.addIceCandidate(candidate);
  }

  onEnded(listener: (reason: SessionEnd) => void): void {
    if (!this.ended) this.listeners.push(listener);
  }

  onConnected(listener: () => void): void {
    this.connectedListeners?.push(listener);
  }

  close(): Promise<void> {
    return this.end('closed');
  }

  get closed(): boolean {
    return this.ended;
  }

  /**
   * Ends the session once: detaches it from the unit, lets a description being made finish (so its
   * socket exists to be closed), closes the connection, tells listeners.
   */
  async end(reason: SessionEnd): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.connectedListeners = undefined;
    this.detach();
    await settledWithin(this.setup, SETUP_WAIT_MS);
    await this.pc.close().catch(() => undefined);
    for (const listener of this.listeners.splice(0)) listener(reason);
  }

  /** Runs a description step after those before it; refused once the session has ended. */
  protected describe<T>(step: () => Promise<T>): Promise<T> {
    const run = this.setup
      .catch(() => undefined)
      .then(() => {
        if (this.ended) throw new SessionClosedError();
        return step();
      });
    this.setup = run;
    return run;
  }

  protected sdp(): string {
    const local = this.pc.localDescription;
    if (!local) throw new Error('no local description after setLocalDescription');
    // werift gathers nothing when every port of the range is taken, and answers anyway: a page
    // given that SDP would wait for a connection that cannot come.
    if (!/^a=candidate:/m.test(local.sdp)) throw new NoMediaPortError();
    return local.sdp;
  }

  /** A page's SDP without candidates whose address is refused. */
  protected remote(sdp: string): string {
    return filterSdpCandidates(sdp, (address) => this.hub.allowed(address));
  }

  protected connected(): void {}
  protected abstract detach(): void;
}

export class Presenter extends PeerSession implements PresenterSession {
  private video: RTCRtpReceiver | undefined;
  private stopFeedback: (() => void) | undefined;

  constructor(id: string, hub: UnitHub) {
    super(id, hub, presenterMediaConfig());
    this.pc.ontrack = ({ track, receiver, transceiver }) => {
      if (this.closed) return;
      if (track.kind === 'video') {
        this.video = receiver;
        this.stopFeedback?.();
        const id = transceiver.headerExtensions.find((e) => e.uri === TRANSPORT_CC_URI)?.id;
        this.stopFeedback = id === undefined ? undefined : sendTransportFeedback(receiver, id);
      }
      hub.attachSource(this, track, receiver);
    };
  }

  answer(offerSdp: string): Promise<string> {
    return this.describe(async () => {
      await this.pc.setRemoteDescription({ type: 'offer', sdp: this.remote(offerSdp) });
      await this.pc.setLocalDescription(await this.pc.createAnswer());
      return withStartBitrate(this.sdp());
    });
  }

  /** Asks the presenter's browser for a keyframe of the video it sends as `ssrc`. */
  requestKeyframe(ssrc: number): void {
    this.video?.sendRtcpPLI(ssrc).catch(() => undefined);
  }

  protected override detach(): void {
    this.stopFeedback?.();
    this.hub.removePresenter(this);
  }
}

export class Viewer extends PeerSession implements ViewerSession {
  readonly senders: { audio: RTCRtpSender; video: RTCRtpSender };

  constructor(id: string, hub: UnitHub) {
    super(id, hub, viewerMediaConfig());
    // Both tracks in one stream, so the page gets them together in its track event's `streams`.
    const streams = [new MediaStream({ id: 'live' })];
    this.senders = {
      audio: this.pc.addTransceiver('audio', { direction: 'sendonly', streams }).sender,
      video: this.pc.addTransceiver('video', { direction: 'sendonly', streams }).sender,
    };
    // The viewer's decoder lost its place (loss, or it started mid-stream): only the presenter
    // can make a keyframe.
    this.senders.video.onPictureLossIndication.subscribe(() => hub.requestKeyframe(this));
  }

  offer(): Promise<string> {
    return this.describe(async () => {
      await this.pc.setLocalDescription(await this.pc.createOffer());
      return this.sdp();
    });
  }

  /** Takes the page's answer; one coming after the session ended is for nobody and dropped. */
  async accept(answerSdp: string): Promise<void> {
    try {
      await this.describe(() => this.pc.setRemoteDescription({ type: 'answer', sdp: this.remote(answerSdp) }));
    } catch (error) {
      if (!(error instanceof SessionClosedError)) throw error;
    }
  }

  /** Packets flow from the moment DTLS is up: the unit probes the viewer's link and sends a keyframe. */
  protected override connected(): void {
    this.hub.viewerConnected(this);
  }

  protected override detach(): void {
    this.hub.removeViewer(this);
  }
}
