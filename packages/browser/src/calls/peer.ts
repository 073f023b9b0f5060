import { type IceServer, SIGNAL_MAX_BYTES, utf8Length } from '@realtime/protocol';
import { CallError } from './errors.js';
import type { RtcOptions } from './types.js';

/**
 * The layers a page sends a forwarding unit, low to high (the unit reads them in this order): a
 * quarter, a half and the whole of the camera's size. Chromium sends a layer only once its uplink
 * estimate covers it, and leaves out layers larger than the camera's picture.
 */
export const SIMULCAST_LAYERS: RTCRtpEncodingParameters[] = [
  { rid: 'q', scaleResolutionDownBy: 4 },
  { rid: 'h', scaleResolutionDownBy: 2 },
  { rid: 'f', scaleResolutionDownBy: 1 },
];

/** What a call's peer connection tells its call. */
export interface PeerHooks {
  /** A description or candidate for the other page, as `call.signal` data. */
  signal(data: Record<string, unknown>): void;
  track(track: MediaStreamTrack): void;
  connected(): void;
  /** The media cannot connect (ICE failed) or a signal could not be used. */
  failed(error: CallError): void;
}

/**
 * One call's RTCPeerConnection. The caller's page makes the one offer; the callee's page answers;
 * candidates trickle both ways through the filter. Candidates received before the description they
 * belong to wait for it, and this side's own wait until its description was sent, so the other page
 * never gets a candidate before the description.
 */
export class Peer {
  readonly connection: RTCPeerConnection;
  readonly #hooks: PeerHooks;
  readonly #filter: RtcOptions['candidateFilter'];
  #described = false;
  #outgoing: RTCIceCandidateInit[] = [];
  #incoming: RTCIceCandidateInit[] = [];
  /** Signals applied one after another: each step waits for the one before. */
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  /** Sends only (a stream's presenter): no receiving directions offered. */
  readonly #sendOnly: boolean;

  constructor(
    ice: readonly IceServer[],
    rtc: RtcOptions,
    local: MediaStream,
    hooks: PeerHooks,
    options: { sendOnly?: boolean } = {},
  ) {
    this.#hooks = hooks;
    this.#sendOnly = options.sendOnly === true;
    this.#filter = rtc.candidateFilter;
    const config: RTCConfiguration = {
      iceServers: ice.map((server) => ({ ...server, urls: [...server.urls] })),
      bundlePolicy: 'max-bundle',
    };
    if (rtc.iceTransportPolicy) config.iceTransportPolicy = rtc.iceTransportPolicy;
    this.connection = new RTCPeerConnection(config);
    const pc = this.connection;
    pc.onicecandidate = ({ candidate }) => {
      // null, or an empty candidate: the end of gathering, which the other side needs not hear.
      if (!candidate?.candidate) return;
      const init = candidate.toJSON();
      if (!this.#keeps(init)) return;
      if (this.#described) this.#send({ candidate: init });
      else this.#outgoing.push(init);
    };
    pc.ontrack = ({ track }) => hooks.track(track);
    pc.onconnectionstatechange = () => {
      if (this.#closed) return;
      if (pc.connectionState === 'connected') hooks.connected();
      else if (pc.connectionState === 'failed')
        hooks.failed(new CallError('peer_failed', 'the media connection failed (ICE)'));
    };
    for (const track of local.getTracks()) {
      if (!this.#sendOnly) pc.addTrack(track, local);
      else if (track.kind === 'video' && rtc.simulcast !== false) {
        // To a forwarding unit: three layers, so each viewer gets the one its link and its element fit.
        pc.addTransceiver(track, { direction: 'sendonly', streams: [local], sendEncodings: SIMULCAST_LAYERS });
      } else pc.addTransceiver(track, { direction: 'sendonly', streams: [local] });
    }
  }

  /** The caller's side: an offer receiving both kinds, whatever it sends itself (a presenter's: sending only). */
  offer(): void {
    const pc = this.connection;
    const sending = new Set(pc.getSenders().map((sender) => sender.track?.kind));
    // So the callee can send video (or audio) even when the caller sends none.
    for (const kind of ['audio', 'video'] as const) {
      if (!sending.has(kind) && !this.#sendOnly) pc.addTransceiver(kind, { direction: 'recvonly' });
    }
    this.#step(async () => {
      await pc.setLocalDescription(await pc.createOffer());
      this.#describe();
    });
  }

  /** A `call.signal` of the other page. */
  receive(data: Record<string, unknown>): void {
    const { sdp, candidate } = data;
    if (isDescription(sdp)) {
      this.#step(async () => {
        const pc = this.connection;
        await pc.setRemoteDescription(sdp);
        for (const init of this.#incoming.splice(0)) await pc.addIceCandidate(init);
        if (sdp.type === 'offer') {
          await pc.setLocalDescription(await pc.createAnswer());
          this.#describe();
        }
      });
    } else if (isCandidate(candidate) && this.#keeps(candidate)) {
      this.#step(async () => {
        if (this.connection.remoteDescription) await this.connection.addIceCandidate(candidate);
        else this.#incoming.push(candidate);
      });
    } else if (this.#sendOnly && typeof data.layers === 'number' && Number.isInteger(data.layers) && data.layers >= 1) {
      const count = data.layers;
      this.#step(() => this.#sendLayers(count));
    }
  }

  /**
   * Dynacast: the forwarding unit says how many of the lowest simulcast layers its viewers can use;
   * the encoder stops making the others (and starts them again, with a keyframe, when asked).
   */
  async #sendLayers(count: number): Promise<void> {
    for (const sender of this.connection.getSenders()) {
      if (sender.track?.kind !== 'video') continue;
      const parameters = sender.getParameters();
      if (parameters.encodings.length < 2) continue;
      let changed = false;
      parameters.encodings.forEach((encoding, i) => {
        const active = i < count;
        if (encoding.active !== active) changed = true;
        encoding.active = active;
      });
      try {
        if (changed) await sender.setParameters(parameters);
      } catch {
        // A browser that will not pause a layer keeps sending it: more uplink used, nothing broken.
      }
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.connection.close();
  }

  #describe(): void {
    const description = this.connection.localDescription;
    if (!description) return;
    this.#send({ sdp: { type: description.type, sdp: description.sdp } });
    this.#described = true;
    for (const init of this.#outgoing.splice(0)) this.#send({ candidate: init });
  }

  #send(data: Record<string, unknown>): void {
    if (this.#closed) return;
    if (utf8Length(JSON.stringify(data)) > SIGNAL_MAX_BYTES) {
      this.#hooks.failed(new CallError('signal_too_large', `a call signal is over ${SIGNAL_MAX_BYTES} bytes`));
      return;
    }
    this.#hooks.signal(data);
  }

  #keeps(candidate: RTCIceCandidateInit): boolean {
    if (!this.#filter) return true;
    try {
      return this.#filter(candidate) === true;
    } catch (error) {
      // The page's filter is broken: the candidate is dropped, and the page hears of it.
      queueMicrotask(() => {
        throw error;
      });
      return false;
    }
  }

  #step(work: () => Promise<void>): void {
    this.#chain = this.#chain.then(async () => {
      if (this.#closed) return;
      try {
        await work();
      } catch (cause) {
        if (this.#closed) return;
        const what = cause instanceof Error ? cause.message : String(cause);
        this.#hooks.failed(new CallError('peer_failed', `WebRTC refused a signal: ${what}`, { cause }));
      }
    });
  }
}

function isDescription(value: unknown): value is RTCSessionDescriptionInit {
  if (typeof value !== 'object' || value === null) return false;
  const { type, sdp } = value as { type?: unknown; sdp?: unknown };
  return (type === 'offer' || type === 'answer') && typeof sdp === 'string';
}

function isCandidate(value: unknown): value is RTCIceCandidateInit {
  return (
    typeof value === 'object' && value !== null && typeof (value as { candidate?: unknown }).candidate === 'string'
  );
}
