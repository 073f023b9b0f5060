/**
 * The presenter's video as the unit receives it: one layer, or three by `rid` (simulcast: the SDK
 * sends q, h and f, low to high, in that order of `a=rid`). Each packet is read once here (layer,
 * VP8 keyframe and size, padding) and handed on; each layer's rate and last keyframe size are kept
 * for the viewers' layer choice, and keyframe requests go out per layer, at most one per interval.
 */
import type { MediaStreamTrack, RTCRtpReceiver, RtpPacket } from 'werift';
import type { LayerState } from './layer-choice.js';
import { LayerRates } from './layer-rates.js';
import { readVp8, type Vp8Info } from './vp8-payload.js';

/** One packet of the presenter's video, read once for every viewer. */
export interface LayerPacket {
  layer: number;
  rtp: RtpPacket;
  /** Undefined when the payload is no VP8 this unit can read (it is then never a switch point). */
  vp8: Vp8Info | undefined;
  /** Padding only (a bandwidth probe of the presenter's browser): never forwarded as is. */
  paddingOnly: boolean;
  /** The presenter sends one layer: a viewer may start on any packet (it asks for a keyframe). */
  single: boolean;
}

/**
 * Layer keyframe requests reach the presenter at most this often each, counted from the request or
 * from the layer's last keyframe, whichever came last, so a burst of viewers costs one. A browser's
 * VP8 simulcast encoder answers a request on any layer with a keyframe on every layer (a grain
 * picture's keyframe at 1280x720 is some 200 kB), so a layer's keyframe that came for another's
 * request serves its own requests too.
 */
const KEYFRAME_INTERVAL_MS = 500;
/**
 * A layer that has flowed this long (ms) sends its own rate; until then (the browser ramps a layer
 * that starts or resumes, after dynacast for one) and while it does not flow, its rate is taken as
 * at least the one it last sent, which is a better guess than twice the layer below (a 1280x720
 * layer sends 2.5-4 times a 640x360 one).
 */
const SETTLED_MS = 3000;
/** A layer whose last packet came this recently (ms) still sends (a 15 fps layer sends every 67 ms). */
const SENDING_MS = 150;

interface Layer {
  track: MediaStreamTrack;
  ssrc: number | undefined;
  width?: number;
  height?: number;
  /** Whether a keyframe request waits for the layer's first packet. */
  keyframeDue: boolean;
  /** When a keyframe was last asked for, or last came (ms). */
  lastKeyframeAt: number;
  /** When the request waiting for the interval's end was made (ms). */
  waitingSince: number;
  timer: NodeJS.Timeout | undefined;
  /** Since when the layer flows, while it does (ms). */
  flowingSince: number | undefined;
  /** Its rate when it last flowed settled (bits/s). */
  settledRate: number;
}

export class SimulcastSource {
  private layers: Layer[] = [];
  private rates = new LayerRates(1);
  private stops: Array<() => void> = [];

  /**
   * @param onPacket every packet of every layer, as it arrives.
   * @param sendPli asks the presenter's browser for a keyframe of the stream it sends as `ssrc`.
   */
  constructor(
    private readonly onPacket: (packet: LayerPacket) => void,
    private readonly sendPli: (ssrc: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get live(): boolean {
    return this.stops.length > 0;
  }

  /** How many layers the presenter offered (1 without simulcast). */
  get count(): number {
    return this.layers.length;
  }

  /**
   * Takes the presenter's video receiver: its tracks by rid when it sends simulcast (werift makes
   * them all when it takes the offer, and tells of the first only), else the one track.
   */
  attach(receiver: RTCRtpReceiver, first: MediaStreamTrack): void {
    this.detach();
    const tracks = receiver.tracks.filter((t) => t.kind === 'video');
    const ordered = tracks.length > 0 ? tracks : [first];
    this.rates = new LayerRates(ordered.length);
    this.layers = ordered.map((track) => ({
      track,
      ssrc: undefined,
      keyframeDue: false,
      lastKeyframeAt: Number.NEGATIVE_INFINITY,
      waitingSince: 0,
      timer: undefined,
      flowingSince: undefined,
      settledRate: 0,
    }));
    this.layers.forEach((layer, index) => {
      const { unSubscribe } = layer.track.onReceiveRtp.subscribe((rtp) => this.receive(index, layer, rtp));
      this.stops.push(unSubscribe);
    });
  }

  detach(): void {
    for (const stop of this.stops.splice(0)) stop();
    for (const layer of this.layers) clearTimeout(layer.timer);
    this.layers = [];
  }

  /**
   * Each layer's rate, whether it flows and its last keyframe's size, low to high. A layer's rate is
   * taken as at least twice the one below it, and, until it has flowed SETTLED_MS, at least the one
   * it sent when it last did: a browser starts a layer low and ramps it over seconds, and a viewer
   * moved up on the starting rate would be moved down again as it grows (or lose packets on a link
   * that cannot take it).
   */
  states(): LayerState[] {
    const now = this.now();
    let below = 0;
    return this.layers.map((layer, index) => {
      const flowing = this.rates.flowing(index, now);
      const measured = this.rates.rate(index, now);
      if (!flowing) layer.flowingSince = undefined;
      else layer.flowingSince ??= now;
      const settled = layer.flowingSince !== undefined && now - layer.flowingSince >= SETTLED_MS;
      // Only while it still sends: a layer that stopped reads lower each moment of its last window.
      if (settled && this.rates.idleFor(index, now) <= SENDING_MS) layer.settledRate = measured;
      const rate = Math.max(measured, 2 * below, settled ? 0 : layer.settledRate);
      below = rate;
      const state: LayerState = { rate, flowing };
      if (layer.width !== undefined && layer.height !== undefined) {
        state.width = layer.width;
        state.height = layer.height;
      }
      return state;
    });
  }

  /** Asks for a keyframe on `layer` (all layers when undefined), at most once per interval per layer. */
  requestKeyframe(layer?: number): void {
    if (layer === undefined) {
      for (let i = 0; i < this.layers.length; i++) this.requestKeyframe(i);
      return;
    }
    const state = this.layers[layer];
    if (!state || state.timer) return;
    const wait = state.lastKeyframeAt + KEYFRAME_INTERVAL_MS - this.now();
    if (wait > 0) {
      state.waitingSince = this.now();
      state.timer = setTimeout(() => {
        state.timer = undefined;
        // A keyframe came meanwhile (asked for another layer): it served this request.
        if (state.lastKeyframeAt >= state.waitingSince) return;
        this.requestKeyframe(layer);
      }, wait);
      state.timer.unref();
      return;
    }
    if (state.ssrc === undefined) {
      // Nothing came on this layer yet: ask once its first packet names its SSRC.
      state.keyframeDue = true;
      return;
    }
    state.lastKeyframeAt = this.now();
    state.keyframeDue = false;
    this.sendPli(state.ssrc);
  }

  private receive(index: number, layer: Layer, rtp: RtpPacket): void {
    const now = this.now();
    const { ssrc } = rtp.header;
    if (layer.ssrc !== ssrc) {
      layer.ssrc = ssrc;
      if (layer.keyframeDue) this.requestKeyframe(index);
    }
    this.rates.add(index, rtp.serializeSize, now);
    const paddingOnly = rtp.payload.length === 0;
    const vp8 = paddingOnly ? undefined : readVp8(rtp.payload);
    if (vp8?.keyframe && vp8.startOfFrame) layer.lastKeyframeAt = now;
    if (vp8?.keyframe && vp8.width !== undefined && vp8.height !== undefined) {
      layer.width = vp8.width;
      layer.height = vp8.height;
    }
    this.onPacket({ layer: index, rtp, vp8, paddingOnly, single: this.layers.length === 1 });
  }
}
