/**
 * One viewer's video: which of the presenter's layers it gets, switched on a keyframe of the layer
 * it moves to, numbered as one continuous stream (RtpMunger), chosen from what its link carries
 * (LinkEstimate: its browser's transport-wide feedback read by SendSideEstimate, or its REMB where
 * it sends no such feedback, raised by probes taken without loss or queueing), the size it asked for
 * and whether it paused video (LayerAllocator). Probes with padding when the allocator asks, so the
 * viewer can earn the next layer. A page's outputs on this node share its link (PageShare): one
 * probes at a time, and each takes what the others' layers leave.
 */
import { type RTCRtpSender, RtcpTransportLayerFeedback, RtpHeader, RtpPacket, TransportWideCC } from 'werift';
import { feedbackResults } from './feedback-results.js';
import { LayerAllocator, type LayerState } from './layer-choice.js';
import { LinkEstimate, SETTLE_MS } from './link-estimate.js';
import { type PageShare, soloShare } from './page-link.js';
import { RtpMunger } from './rtp-munger.js';
import { SendSideEstimate } from './send-side-estimate.js';
import type { LayerPacket } from './simulcast-source.js';
import type { VideoWants } from './video-wants.js';
import { Vp8Munger } from './vp8-munger.js';

/** Padding bytes per probe packet: the most one RTP packet can carry. */
const PROBE_PADDING = 255;
/** How often a probe sends its next packets (ms). */
const PROBE_TICK_MS = 10;
/** The most padding one tick sends, in ms of the probe's rate. */
const PROBE_BURST_MS = 50;
/**
 * Probes: 1.2 s each, judged once the link settled (a second on) or at once when one fails, the
 * next at least 2 s after that, and after failures no more than 3 s, so a link that opens up is
 * found within about 10 s (wait, probe, settle, hold, keyframe), while a full one is probed a
 * third of the time at most (and a probe there ends at its first loss, or as soon as its feedback
 * shows the link queueing). For 2 s after a move up the new layer may run half again over the
 * estimate: its keyframe, asked for by the move, swells its rate. At the top nothing is probed: a
 * layer's rate swings (keyframes, the encoder's ramp), and a swing carried without loss raises the
 * estimate with it (LinkEstimate.carrying). Waits are lengthened by up to half at random.
 */
const ALLOCATION = {
  holdMs: 1000,
  probeMs: 1200,
  probeSettleMs: SETTLE_MS,
  probeWaitMs: 2000,
  maxProbeWaitMs: 3000,
  upGraceMs: 2000,
  probeJitter: 0.5,
};
/**
 * How long a viewer must have had its layer before its link can count as carrying it (ms): as long
 * as the grace after a move up, so a layer whose encoder still ramps (dynacast just turned it on)
 * is counted as carried from the moment the grace ends, with the last second of it clean.
 */
const CARRY_AFTER_MS = ALLOCATION.upGraceMs;
/** A probe pads this much more than the allocator asks (see allocate). */
const PROBE_OVERSHOOT = 1.5;

const noop = (): void => undefined;
/**
 * A probe packet's padding, written as its payload with the P bit set: werift's SRTP encrypts the
 * header and the payload only, leaving out the padding its own packets describe (the receiver
 * would then read a header byte as the padding's length). The last byte counts the padding.
 */
const PROBE_PAYLOAD = Buffer.alloc(PROBE_PADDING);
PROBE_PAYLOAD.writeUInt8(PROBE_PADDING, PROBE_PADDING - 1);
/** A probe fails when its link is queueing and delivers less than this share of the rate it is sent. */
const DELIVERY_FLOOR = 0.85;
/** A delivery ratio this high, with no rising delay, is a link that keeps up (see the NACK handler). */
const CLEAR_RATIO = 0.95;
/** An RTP header as sent to a viewer: 12 bytes and the abs-send-time and transport-cc extensions. */
const HEADER_BYTES = 24;

export class VideoOutput {
  private readonly munger: RtpMunger;
  /** The VP8 picture ids and TL0PICIDX, one count across layers and presenters. */
  private readonly vp8 = new Vp8Munger();
  private readonly allocator = new LayerAllocator(ALLOCATION);
  private readonly link = new LinkEstimate();
  private readonly sendSide = new SendSideEstimate();
  private readonly stopNacks: () => void;
  private readonly stopFeedback: () => void;
  /** What the viewer's current layer carries (bits/s), as of the last choice. */
  private layerRate = 0;
  /** When the viewer was moved to the layer it gets (ms). */
  private switchedAt = 0;
  /** The running probe's padding rate (bits/s). */
  private probeRate = 0;
  private current: number | undefined;
  private target: number | undefined;
  private wants: VideoWants = {};
  private probeTimer: NodeJS.Timeout | undefined;
  private probeUntil = 0;
  private endedProbeUntil = 0;
  private probeCredit = 0;
  /** The last packet forwarded did not end its frame (no marker bit): padding must wait. */
  private midFrame = false;

  /**
   * @param keyframe asks the presenter for a keyframe of a layer (the one this viewer moves to).
   * @param share the viewer page's link, shared with its other outputs on this node.
   */
  constructor(
    readonly sender: RTCRtpSender,
    clockRate: number,
    private readonly keyframe: (layer: number) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly share: PageShare = soloShare(),
  ) {
    this.munger = new RtpMunger(clockRate);
    // Another output of the page saw its packets lost during this one's probe: the probe filled the link.
    share.onProbeFailed(() => this.link.congested());
    this.stopNacks = sender.onGenericNack.subscribe((nack) => {
      // Asked again while the link delivers all it is sent, as fast as sent, with no queue: the
      // packets came late to a busy receiver, not lost on the link (a full link delivers slower).
      const ratio = this.sendSide.deliveryRatio;
      if (ratio !== undefined && ratio >= CLEAR_RATIO && this.sendSide.usage !== 'overusing') return;
      const now = this.now();
      this.share.lost();
      if (this.link.lost(nack.lost.length, now, this.layerRate)) this.share.overloaded(now);
      if (this.probeTimer && this.link.probeFailing) this.endProbe();
    }).unSubscribe;
    this.stopFeedback = sender.onRtcp.subscribe((rtcp) => {
      if (!(rtcp instanceof RtcpTransportLayerFeedback) || !(rtcp.feedback instanceof TransportWideCC)) return;
      this.sendSide.feedback(feedbackResults(rtcp.feedback), this.now());
      // Queueing, and for real: the link delivers well under what it is sent. A busy receiver's
      // late arrival stamps alone can read as a rising delay, but not as a slower delivery.
      const ratio = this.sendSide.deliveryRatio;
      if (this.sendSide.usage === 'overusing' && ratio !== undefined && ratio < DELIVERY_FLOOR) {
        this.link.congested();
        this.share.lost();
      }
      if (this.probeTimer && this.link.probeFailing) this.endProbe();
    }).unSubscribe;
  }

  /** The layer forwarded now and the one chosen (they differ until the chosen one's keyframe). */
  get layers(): { current: number | undefined; target: number | undefined } {
    return { current: this.current, target: this.target };
  }

  /** What the viewer's link carries (bits/s), or undefined before its browser's first REMB. */
  get estimate(): number | undefined {
    return this.link.estimate(this.now());
  }

  /** What the viewer asked of its video (adaptive stream). */
  get wanted(): VideoWants {
    return this.wants;
  }

  want(wants: VideoWants): void {
    this.wants = { ...wants };
  }

  /** The viewer's media connected: packets reach it from now on, and it needs a keyframe. */
  connected(): void {
    this.pictureLost();
  }

  /** The viewer lost its decoder's place: a keyframe of the layer it gets (or is moving to). */
  pictureLost(): void {
    const layer = this.target ?? this.current;
    if (layer !== undefined) this.keyframe(layer);
  }

  /**
   * Chooses the layer again (every allocation tick): a new target asks for its keyframe, and the
   * switch happens when it comes. A probe the allocator asks for starts here.
   */
  allocate(layers: readonly LayerState[]): void {
    const now = this.now();
    this.followReceiver();
    // A layer held for a while with no loss: its link carries it (LinkEstimate.carrying).
    if (this.current !== undefined && now - this.switchedAt >= CARRY_AFTER_MS) {
      this.link.carrying(layers[this.current]?.rate ?? 0, now);
    }
    const own = this.link.estimate(now);
    const budget = this.share.budget;
    const estimate = own === undefined || budget === undefined ? own : Math.min(own, budget);
    // Never under the lowest layer and a quarter: there is nothing lower to move to, and the
    // allocator probes only from a layer the estimate covers (a loss cap under it would keep the
    // viewer there for good).
    const floor = (layers[0]?.rate ?? 0) * 1.25;
    // What the page's other outputs here leave of what its link was seen to carry: a bound on moves up.
    const room = this.share.room;
    const choice = this.allocator.update({
      nowMs: now,
      layers,
      estimate: estimate === undefined ? undefined : Math.max(estimate, floor),
      ceiling: room === undefined ? undefined : Math.max(room, floor),
      maxWidth: this.wants.maxWidth,
      maxHeight: this.wants.maxHeight,
      paused: this.wants.paused === true,
    });
    this.target = choice.target;
    if (this.target === undefined)
      this.current = undefined; // paused, or nothing flows: stop at once
    // Asked again each tick while it has not come (a request can be lost); the source paces them.
    else if (this.target !== this.current) this.keyframe(this.target);
    this.layerRate = this.current === undefined ? 0 : (layers[this.current]?.rate ?? 0);
    this.share.rate = this.target === undefined ? 0 : (layers[this.target]?.rate ?? 0);
    if (choice.probe && this.current !== undefined) {
      // Half again what the next layer needs (a layer's rate swings with its content and keyframes,
      // and the allocator moves up only with a margin above it), or as much as the estimate if that
      // is more: a link that carries it all is found in a few doubling probes, not one per layer.
      // (On a shared link, the estimate is this output's part of what the page was seen to carry.)
      // Not on a shared link that was found full once: doubling this output's part would overflow
      // the others'.
      const overshoot = choice.probe.bitsPerSecond * PROBE_OVERSHOOT;
      const doubling = !this.share.capped;
      const reach = room === undefined || estimate === undefined ? estimate : Math.min(estimate, room);
      const padding = doubling ? Math.max(overshoot, reach ?? 0) : overshoot;
      this.startProbe(padding, choice.probe.untilMs);
    }
  }

  /** A packet of the presenter's video: forwarded when it is of this viewer's layer. */
  forward(packet: LayerPacket): void {
    const { layer, rtp } = packet;
    const now = this.now();
    // A new stream: another layer, or a new SSRC on this one (a new presenter on the same source).
    if (layer !== this.current || rtp.header.ssrc !== this.munger.source) {
      if (layer !== this.target) return;
      // A move between layers waits for the new one's keyframe; with one layer there is no move.
      const switchPoint = packet.vp8?.keyframe === true && packet.vp8.startOfFrame;
      if (!switchPoint && !packet.single) return;
      this.munger.switchTo(rtp.header.ssrc, rtp.header.sequenceNumber, rtp.header.timestamp, now);
      this.vp8.switchTo();
      this.current = layer;
      this.switchedAt = now;
    }
    const out = this.munger.map(
      rtp.header.ssrc,
      rtp.header.sequenceNumber,
      rtp.header.timestamp,
      packet.paddingOnly,
      now,
    );
    if (!out) return;
    // Each sender writes SSRC and payload type into the header: each viewer gets its own header over
    // the one shared payload. The presenter's extensions were negotiated with the presenter: dropped.
    const copy = rtp.clone();
    copy.header.extensions = [];
    copy.header.extension = false;
    // werift took the padding off the payload and would send the P bit without it (see PROBE_PAYLOAD).
    copy.header.padding = false;
    copy.header.paddingSize = 0;
    copy.header.sequenceNumber = out.sequenceNumber;
    copy.header.timestamp = out.timestamp;
    if (packet.vp8) copy.payload = this.vp8.rewrite(copy.payload);
    this.midFrame = !rtp.header.marker;
    this.sent(this.sender.sendRtp(copy), copy.payload.length, now);
  }

  close(): void {
    this.stopNacks();
    this.stopFeedback();
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.share.leave();
  }

  /** Padding on the viewer's stream at `bitsPerSecond` until `untilMs`, so its estimate can grow. */
  private startProbe(bitsPerSecond: number, untilMs: number): void {
    // The allocator repeats a probe until its end: one ended early (loss) stays ended.
    if (this.probeTimer || untilMs === this.endedProbeUntil) return;
    // Another output of the page probes, or the page's link is still settling: not now.
    if (!this.share.startProbe(this.now())) return;
    this.probeUntil = untilMs;
    this.link.probeStarted();
    this.probeRate = bitsPerSecond;
    this.probeCredit = 0;
    let last = this.now();
    const startedAt = last;
    const span = Math.max(1, untilMs - startedAt);
    this.probeTimer = setInterval(() => {
      const now = this.now();
      this.followReceiver();
      if (now >= this.probeUntil || this.current === undefined || this.link.probeFailing) {
        this.endProbe();
        return;
      }
      // Rising from nothing to the full rate over the first half, then held: a link that is full
      // overflows a little at first, and its first loss (or its REMB falling) ends the probe.
      const rate = (bitsPerSecond * Math.min(1, (2 * (now - startedAt)) / span)) | 0;
      // At most PROBE_BURST_MS of it at once: a stalled event loop must not come back to a burst.
      this.probeCredit = Math.min(this.probeCredit + ((now - last) * rate) / 8000, (PROBE_BURST_MS * rate) / 8000);
      last = now;
      // Between frames only, as a browser pads its own video: a padding packet takes a sequence
      // number, and one inside a frame breaks the frame's run of numbers, so the viewer's browser
      // never assembles it and freezes until it asks for a keyframe (seen: a second of no frame).
      if (this.midFrame) return;
      const packetBytes = PROBE_PADDING + 12;
      for (; this.probeCredit >= packetBytes; this.probeCredit -= packetBytes) this.sendPadding();
    }, PROBE_TICK_MS);
    this.probeTimer.unref();
  }

  /** Stops the probe; the link reckons what it carried (its layer and the padding) if it lost nothing. */
  private endProbe(): void {
    this.endedProbeUntil = this.probeUntil;
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    const sent = this.layerRate + this.probeRate;
    // A probe past the link's rate carried only what got through, where the browser says so.
    const ratio = this.sendSide.deliveryRatio;
    const acked = ratio !== undefined && ratio < DELIVERY_FLOOR ? this.sendSide.acked : undefined;
    const carried = acked === undefined ? sent : Math.min(sent, acked);
    const now = this.now();
    const worked = this.link.probeEnded(carried, now);
    this.share.probeEnded(worked, carried, now);
    if (!worked) this.allocator.probeFailed(now);
  }

  private sendPadding(): void {
    const now = this.now();
    const { sequenceNumber, timestamp } = this.munger.padding(now);
    const header = new RtpHeader({ sequenceNumber, timestamp, padding: true });
    this.sent(this.sender.sendRtp(new RtpPacket(header, PROBE_PAYLOAD)), PROBE_PADDING, now);
  }

  /**
   * Counts a packet just handed to the sender. werift numbers it (transport-wide) before its first
   * await, so the transport's counter is this packet's number now.
   */
  private sent(sending: Promise<void>, payloadBytes: number, now: number): void {
    sending.catch(noop);
    this.link.sent(1, now);
    const sequence = this.sender.dtlsTransport.transportSequenceNumber;
    if (sequence !== undefined) this.sendSide.sent(sequence, payloadBytes + HEADER_BYTES, now);
  }

  /** Takes in what the viewer's browser says its link carries: its transport-wide feedback, else its REMB. */
  private followReceiver(): void {
    const estimate = this.sendSide.estimate ?? Number(this.sender.receiverEstimatedMaxBitrate);
    if (estimate > 0) this.link.remb(estimate);
  }
}
