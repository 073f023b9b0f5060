import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  Event,
  GenericNack,
  type RTCRtpSender,
  type RtcpPacket,
  RtcpPacketConverter,
  RtpHeader,
  RtpPacket,
} from 'werift';
import type { LayerState } from './layer-choice.js';
import { PageLinks } from './page-link.js';
import type { LayerPacket } from './simulcast-source.js';
import { TransportFeedback } from './transport-feedback.js';
import { VideoOutput } from './video-output.js';
import { readVp8 } from './vp8-payload.js';

const CLOCK = 90_000;
/** 90 kHz ticks between frames of a 30 fps layer. */
const FRAME = 3000;

/**
 * A werift sender as VideoOutput uses it. It records a copy of each packet, then writes its own SSRC
 * and payload type into the header it was given, as werift's sender does (a packet shared between
 * viewers would show it).
 */
class FakeSender {
  readonly sent: RtpPacket[] = [];
  receiverEstimatedMaxBitrate = 0n;
  readonly onGenericNack = new Event<[GenericNack]>();
  readonly onRtcp = new Event<[RtcpPacket]>();
  /** werift numbers each packet on the transport (transport-wide congestion control) as it sends it. */
  readonly dtlsTransport = { state: 'connected', transportSequenceNumber: 0 };

  constructor(private readonly ssrc = 0xabcdef) {}

  sendRtp(packet: Buffer | RtpPacket): Promise<void> {
    if (Buffer.isBuffer(packet)) throw new Error('VideoOutput sends packets, not buffers');
    const header = new RtpHeader({ ...packet.header, extensions: [...packet.header.extensions] });
    this.sent.push(new RtpPacket(header, Buffer.from(packet.payload)));
    this.dtlsTransport.transportSequenceNumber = (this.dtlsTransport.transportSequenceNumber + 1) & 0xffff;
    packet.header.ssrc = this.ssrc;
    packet.header.payloadType = 111;
    return Promise.resolve();
  }

  nack(...lost: number[]): void {
    this.onGenericNack.execute(new GenericNack({ lost }));
  }

  /**
   * The browser's transport-wide feedback on the packets sent from `from` on, each arriving when
   * `arrivalMs` says (undefined: lost), as werift parses it off the wire.
   */
  feedback(from: number, arrivalMs: (index: number) => number | undefined): void {
    const builder = new TransportFeedback(0x5151);
    for (let i = from; i < this.sent.length; i++) {
      const at = arrivalMs(i);
      if (at !== undefined) builder.received((i + 1) & 0xffff, at * 1000);
    }
    const packet = builder.take(this.ssrc);
    if (!packet) return;
    for (const rtcp of RtcpPacketConverter.deSerialize(packet)) this.onRtcp.execute(rtcp);
  }

  get asSender(): RTCRtpSender {
    return this as unknown as RTCRtpSender;
  }

  /** Sequence numbers of what was sent, from `from` on. */
  seqs(from = 0): number[] {
    return this.sent.slice(from).map((p) => p.header.sequenceNumber);
  }

  padding(): RtpPacket[] {
    return this.sent.filter((p) => p.header.padding);
  }
}

type Kind = 'key' | 'inter' | 'rest' | 'padding';

/** One of the presenter's layers: its packets in order, each new frame 33 ms of RTP time after the last. */
class PresenterLayer {
  constructor(
    readonly layer: number,
    readonly ssrc: number,
    public sequenceNumber: number,
    public timestamp: number,
    readonly single = false,
  ) {}

  /** When set, each payload's descriptor carries it (15-bit, one per frame) and TL0PICIDX (its low byte). */
  picture: number | undefined;

  /** The next packet; `last` false: more packets of its frame follow (no marker bit). */
  next(kind: Kind, last = kind !== 'padding'): LayerPacket {
    if (kind === 'key' || kind === 'inter') this.timestamp = (this.timestamp + FRAME) >>> 0;
    const header = new RtpHeader({
      ssrc: this.ssrc,
      sequenceNumber: this.sequenceNumber,
      timestamp: this.timestamp,
      payloadType: 96,
      marker: last,
    });
    this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
    let payload = vp8(kind, this.layer);
    if (this.picture !== undefined && kind !== 'padding') {
      if (kind === 'key' || kind === 'inter') this.picture = (this.picture + 1) & 0x7fff;
      const id = this.picture;
      const descriptor = [(payload[0] as number) | 0x80, 0xc0, 0x80 | (id >> 8), id & 0xff, id & 0xff];
      payload = Buffer.concat([Buffer.from(descriptor), payload.subarray(1)]);
    }
    const rtp = new RtpPacket(header, payload);
    return { layer: this.layer, rtp, vp8: readVp8(payload), paddingOnly: kind === 'padding', single: this.single };
  }
}

/** VP8 payloads: a keyframe's first packet (sized by layer), an interframe's, a frame's later packet, none. */
function vp8(kind: Kind, layer: number): Buffer {
  switch (kind) {
    case 'key': {
      const payload = Buffer.alloc(40);
      payload.set([0x10, 0x00, 0x00, 0x00, 0x9d, 0x01, 0x2a]);
      payload.writeUInt16LE(320 << layer, 7);
      payload.writeUInt16LE(180 << layer, 9);
      return payload;
    }
    case 'inter':
      return Buffer.from([0x10, 0x01, 0x00, 0x00, 0xaa, 0xbb]);
    case 'rest':
      return Buffer.from([0x00, 0xcc, 0xdd]);
    case 'padding':
      return Buffer.alloc(0);
  }
}

/** Three flowing layers: 320×180 at 100 kbit/s, 640×360 at 300 kbit/s, 1280×720 at 1 Mbit/s. */
const THREE: LayerState[] = [
  { rate: 100_000, flowing: true, width: 320, height: 180 },
  { rate: 300_000, flowing: true, width: 640, height: 360 },
  { rate: 1_000_000, flowing: true, width: 1280, height: 720 },
];

describe('VideoOutput', () => {
  let sender: FakeSender;
  let keyframes: number[];
  let output: VideoOutput;
  let q: PresenterLayer;
  let h: PresenterLayer;
  let f: PresenterLayer;

  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
    sender = new FakeSender();
    keyframes = [];
    output = new VideoOutput(
      sender.asSender,
      CLOCK,
      (layer) => keyframes.push(layer),
      () => Date.now(),
    );
    q = new PresenterLayer(0, 0x1111, 1000, 10_000);
    h = new PresenterLayer(1, 0x2222, 30_000, 500_000);
    f = new PresenterLayer(2, 0x3333, 65_530, 4_000_000_000);
  });

  afterEach(() => {
    output.close();
    vi.useRealTimers();
  });

  it('forwards its layer only, from that layer keyframe on, with the presenter numbers', () => {
    output.allocate(THREE);
    // No estimate yet: the lowest layer, and its keyframe asked for.
    expect(output.layers).toEqual({ current: undefined, target: 0 });
    expect(output.estimate).toBeUndefined();
    expect(keyframes).toEqual([0]);

    output.forward(h.next('key'));
    output.forward(f.next('key'));
    output.forward(q.next('inter'));
    output.forward(q.next('rest'));
    expect(sender.sent).toEqual([]);

    const key = q.next('key');
    output.forward(key);
    output.forward(h.next('inter'));
    output.forward(q.next('rest'));
    output.forward(f.next('inter'));
    output.forward(q.next('inter'));
    expect(output.layers).toEqual({ current: 0, target: 0 });
    expect(sender.seqs()).toEqual([1002, 1003, 1004]);
    expect(sender.sent.map((p) => p.header.timestamp)).toEqual([
      key.rtp.header.timestamp,
      key.rtp.header.timestamp,
      key.rtp.header.timestamp + FRAME,
    ]);
    expect(sender.sent[0]?.payload).toEqual(key.rtp.payload);
  });

  it('copies the header for each viewer, without the presenter extensions and padding flag', () => {
    const other = new FakeSender(0x999);
    const second = new VideoOutput(
      other.asSender,
      CLOCK,
      () => undefined,
      () => Date.now(),
    );
    output.allocate(THREE);
    second.allocate(THREE);
    const key = q.next('key');
    key.rtp.header.extension = true;
    key.rtp.header.extensions = [{ id: 3, payload: Buffer.from([1, 2, 3]) }];
    key.rtp.header.padding = true;
    key.rtp.header.paddingSize = 4;
    output.forward(key);
    second.forward(key);
    second.close();

    for (const got of [sender.sent[0], other.sent[0]]) {
      expect(got?.header).toMatchObject({
        ssrc: 0x1111,
        payloadType: 96,
        sequenceNumber: key.rtp.header.sequenceNumber,
        timestamp: key.rtp.header.timestamp,
        marker: true,
        extension: false,
        extensions: [],
        padding: false,
        paddingSize: 0,
      });
      expect(got?.payload).toEqual(key.rtp.payload);
    }
    // The presenter's packet, read by every viewer, is as it came.
    expect(key.rtp.header).toMatchObject({ ssrc: 0x1111, payloadType: 96, extension: true, padding: true });
    expect(key.rtp.header.extensions).toHaveLength(1);
  });

  it('moves down at the lower layer keyframe: numbered on from the last + 1, the timestamp moved on by wall time', () => {
    sender.receiverEstimatedMaxBitrate = 2_000_000n;
    output.allocate(THREE);
    expect(output.layers.target).toBe(2);
    expect(output.estimate).toBe(2_000_000);
    output.forward(f.next('key'));
    output.forward(f.next('rest'));
    vi.advanceTimersByTime(33);
    output.forward(f.next('inter'));
    const last = sender.sent.at(-1)?.header;
    // f's sequence numbers wrap: the viewer's go on from 65530 past 0.
    expect(sender.seqs()).toEqual([65_530, 65_531, 65_532]);

    sender.receiverEstimatedMaxBitrate = 250_000n;
    vi.advanceTimersByTime(20);
    output.allocate(THREE);
    expect(output.layers).toEqual({ current: 2, target: 0 });
    expect(keyframes.at(-1)).toBe(0);

    // f goes on until q's keyframe; q's interframes before it are not forwarded.
    output.forward(q.next('inter'));
    output.forward(f.next('rest'));
    vi.advanceTimersByTime(40);
    output.forward(h.next('key'));
    output.forward(q.next('key'));
    expect(output.layers).toEqual({ current: 0, target: 0 });
    output.forward(f.next('inter'));
    output.forward(q.next('rest'));
    vi.advanceTimersByTime(33);
    output.forward(q.next('inter'));
    output.forward(q.next('rest'));

    expect(sender.seqs(3)).toEqual([65_533, 65_534, 65_535, 0, 1]);
    expect(sender.sent.slice(3).map((p) => p.header.ssrc)).toEqual([0x3333, 0x1111, 0x1111, 0x1111, 0x1111]);
    const stamps = sender.sent.slice(3).map((p) => p.header.timestamp);
    // f's last packet went out at 53 ms (its frame's timestamp), q's keyframe 40 ms of wall time later.
    const frame = last?.timestamp ?? 0;
    const switched = frame + 40 * 90;
    expect(stamps).toEqual([frame, switched, switched, switched + FRAME, switched + FRAME]);
  });

  it('moves up only after the estimate covered the next layer for the hold, then at its keyframe', () => {
    output.allocate(THREE);
    output.forward(q.next('key'));
    sender.receiverEstimatedMaxBitrate = 500_000n;
    vi.advanceTimersByTime(100);
    output.allocate(THREE);
    vi.advanceTimersByTime(999);
    output.allocate(THREE);
    expect(output.layers).toEqual({ current: 0, target: 0 });
    output.forward(h.next('key'));
    vi.advanceTimersByTime(1);
    output.allocate(THREE);
    expect(output.layers).toEqual({ current: 0, target: 1 });
    expect(keyframes).toEqual([0, 1]);
    // Asked again each allocation while it has not come.
    output.allocate(THREE);
    expect(keyframes).toEqual([0, 1, 1]);

    output.forward(h.next('inter'));
    output.forward(q.next('inter'));
    output.forward(h.next('key'));
    output.forward(h.next('rest'));
    output.forward(q.next('inter'));
    expect(sender.seqs()).toEqual([1000, 1001, 1002, 1003]);
    expect(sender.sent.map((p) => p.header.ssrc)).toEqual([0x1111, 0x1111, 0x2222, 0x2222]);
  });

  it('gives the viewer one VP8 picture count across a switch of layers (picture id and TL0PICIDX)', () => {
    f.picture = 20_000;
    q.picture = 300;
    const count = (from: number) =>
      sender.sent
        .slice(from)
        .map((p) => [(((p.payload[2] as number) & 0x7f) << 8) | (p.payload[3] as number), p.payload[4]]);
    sender.receiverEstimatedMaxBitrate = 2_000_000n;
    output.allocate(THREE);
    output.forward(f.next('key'));
    output.forward(f.next('rest'));
    output.forward(f.next('inter'));
    // The first layer keeps its own count.
    expect(count(0)).toEqual([
      [20_001, 20_001 & 0xff],
      [20_001, 20_001 & 0xff],
      [20_002, 20_002 & 0xff],
    ]);
    sender.receiverEstimatedMaxBitrate = 250_000n;
    vi.advanceTimersByTime(20);
    output.allocate(THREE);
    const key = q.next('key');
    output.forward(key);
    output.forward(q.next('rest'));
    output.forward(q.next('inter'));
    // q's own 301, 302 follow f's 20,002 as 20,003, 20,004; its TL0PICIDX alike.
    expect(count(3)).toEqual([
      [20_003, (20_002 + 1) & 0xff],
      [20_003, (20_002 + 1) & 0xff],
      [20_004, (20_002 + 2) & 0xff],
    ]);
    // The presenter's packet (every viewer's) is left as it came.
    expect(readVp8(key.rtp.payload)?.pictureId).toBe(301);
    expect(readVp8(sender.sent[3]?.payload ?? Buffer.alloc(0))).toMatchObject({
      keyframe: true,
      width: 320,
      pictureId: 20_003,
    });
  });

  it('sends nothing to a paused viewer, and resumes without a gap at the next keyframe', () => {
    output.allocate(THREE);
    output.forward(q.next('key'));
    output.forward(q.next('inter'));
    const last = sender.sent.at(-1)?.header;

    output.want({ paused: true });
    vi.advanceTimersByTime(10);
    output.allocate(THREE);
    expect(output.layers).toEqual({ current: undefined, target: undefined });
    const asked = keyframes.length;
    output.pictureLost();
    for (let i = 0; i < 30; i++) output.forward(q.next(i % 10 === 0 ? 'key' : 'inter'));
    expect(sender.sent).toHaveLength(2);
    expect(keyframes).toHaveLength(asked);

    output.want({});
    vi.advanceTimersByTime(990);
    output.allocate(THREE);
    expect(keyframes.slice(asked)).toEqual([0]);
    output.forward(q.next('inter'));
    output.forward(q.next('key'));
    output.forward(q.next('inter'));
    expect(sender.seqs(2)).toEqual([(last?.sequenceNumber ?? 0) + 1, (last?.sequenceNumber ?? 0) + 2]);
    expect(sender.sent[2]?.header.timestamp).toBe((last?.timestamp ?? 0) + 1000 * 90);
  });

  it('keeps a viewer that asked for a small size on the lowest layer, whatever its link', () => {
    sender.receiverEstimatedMaxBitrate = 10_000_000n;
    output.want({ maxWidth: 300, maxHeight: 160 });
    for (let t = 0; t < 5000; t += 500) {
      output.allocate(THREE);
      expect(output.layers.target).toBe(0);
      output.forward(f.next('key'));
      output.forward(h.next('key'));
      output.forward(q.next('key'));
      vi.advanceTimersByTime(500);
    }
    expect(new Set(keyframes)).toEqual(new Set([0]));
    expect(new Set(sender.sent.map((p) => p.header.ssrc))).toEqual(new Set([0x1111]));
    // Nothing to earn: no probe.
    expect(sender.padding()).toEqual([]);

    // Asked for more, it climbs to the top layer its link carries, a layer a hold.
    output.want({ maxWidth: 1280, maxHeight: 720 });
    const targets: Array<number | undefined> = [];
    for (let t = 0; t <= 3000; t += 500) {
      output.allocate(THREE);
      targets.push(output.layers.target);
      vi.advanceTimersByTime(500);
    }
    expect(targets).toEqual([0, 0, 1, 1, 1, 2, 2]);
  });

  it('starts a single-layer source at any packet, a multi-layer one only at a keyframe', () => {
    const only = new PresenterLayer(0, 0x4444, 7000, 1234, true);
    output.allocate([{ rate: 500_000, flowing: true }]);
    expect(keyframes).toEqual([0]);
    output.forward(only.next('rest'));
    output.forward(only.next('inter'));
    expect(sender.seqs()).toEqual([7000, 7001]);
    expect(sender.sent[0]?.header.timestamp).toBe(1234);
    expect(output.layers).toEqual({ current: 0, target: 0 });

    const multi = new FakeSender();
    const viewer = new VideoOutput(
      multi.asSender,
      CLOCK,
      () => undefined,
      () => Date.now(),
    );
    viewer.allocate(THREE);
    viewer.forward(q.next('rest'));
    viewer.forward(q.next('inter'));
    expect(multi.sent).toEqual([]);
    viewer.close();
  });

  // A new presenter's layers come from new SSRCs on the same layer indexes (ForwardingUnit attaches
  // its receiver to the same SimulcastSource); a viewer whose allocation saw no gap goes on there.
  it('takes a new SSRC on the layer it forwards (a new presenter) at its keyframe, numbered on', () => {
    output.allocate(THREE);
    output.forward(q.next('key'));
    output.forward(q.next('inter'));
    const again = new PresenterLayer(0, 0x5555, 200, 77_777);
    vi.advanceTimersByTime(500);
    output.allocate(THREE);
    output.forward(again.next('inter'));
    output.forward(again.next('key'));
    output.forward(again.next('inter'));
    expect(sender.sent.map((p) => [p.header.ssrc, p.header.sequenceNumber])).toEqual([
      [0x1111, 1000],
      [0x1111, 1001],
      [0x5555, 1002],
      [0x5555, 1003],
    ]);
  });

  it('takes a new SSRC of a single-layer source (a new presenter), numbered on', () => {
    const first = new PresenterLayer(0, 0x4444, 7000, 1234, true);
    const one = [{ rate: 500_000, flowing: true }];
    output.allocate(one);
    output.forward(first.next('key'));
    const again = new PresenterLayer(0, 0x5555, 200, 77_777, true);
    vi.advanceTimersByTime(500);
    output.allocate(one);
    output.forward(again.next('key'));
    output.forward(again.next('inter'));
    expect(sender.sent.map((p) => [p.header.ssrc, p.header.sequenceNumber])).toEqual([
      [0x4444, 7000],
      [0x5555, 7001],
      [0x5555, 7002],
    ]);
  });

  it('drops the presenter padding-only packets without leaving a gap in the numbers', () => {
    output.allocate(THREE);
    output.forward(q.next('key'));
    output.forward(q.next('padding'));
    output.forward(q.next('padding'));
    output.forward(q.next('inter'));
    output.forward(q.next('padding'));
    output.forward(q.next('rest'));
    expect(sender.seqs()).toEqual([1000, 1001, 1002]);
    expect(sender.sent.every((p) => p.payload.length > 0)).toBe(true);
  });

  /** On q at 100 kbit/s with a link of 200 kbit/s: at 1000 ms the allocator asks to probe for h. */
  function startProbe(): void {
    sender.receiverEstimatedMaxBitrate = 200_000n;
    output.allocate(THREE);
    expect(output.layers.target).toBe(0);
    output.forward(q.next('key'));
    for (let t = 0; t < 1000; t += 100) {
      vi.advanceTimersByTime(100);
      output.forward(q.next('inter'));
      output.allocate(THREE);
    }
    expect(sender.padding()).toEqual([]);
  }

  it('probes with padding packets (P bit, 255 bytes ending in 255) numbered on with the media', () => {
    startProbe();
    const media = sender.sent.at(-1)?.header;
    vi.advanceTimersByTime(300);
    const probes = sender.sent.slice(11);
    expect(probes.length).toBeGreaterThan(0);
    for (const probe of probes) {
      expect(probe.header.padding).toBe(true);
      expect(probe.header.timestamp).toBe(media?.timestamp);
      expect(probe.payload).toHaveLength(255);
      expect(probe.payload.at(-1)).toBe(255);
      expect(probe.payload.subarray(0, 254).every((b) => b === 0)).toBe(true);
    }
    output.forward(q.next('inter'));
    vi.advanceTimersByTime(50);
    output.forward(q.next('inter'));
    const first = media?.sequenceNumber ?? 0;
    expect(sender.seqs(10)).toEqual(Array.from({ length: sender.sent.length - 10 }, (_, i) => first + i));
    expect(sender.sent.at(-1)?.header.padding).toBe(false);

    // From the middle of the probe on, it pads at 1.5 × what h needs above q: 300 kbit/s of 267-byte packets.
    vi.advanceTimersByTime(1600 - 1350);
    const before = sender.padding().length;
    vi.advanceTimersByTime(500);
    const count = sender.padding().length - before;
    expect(count).toBeGreaterThanOrEqual(68);
    expect(count).toBeLessThanOrEqual(72);

    // It ends at its end (1.2 s after it started), and the allocator starts none before its wait.
    vi.advanceTimersByTime(2200 - 2100);
    const all = sender.padding().length;
    output.allocate(THREE);
    vi.advanceTimersByTime(500);
    expect(sender.padding()).toHaveLength(all);
  });

  it('pads only between frames: never between the packets of one', () => {
    startProbe();
    vi.advanceTimersByTime(300);
    expect(sender.padding().length).toBeGreaterThan(0);
    // A frame of three packets, the probe's timer firing between them: a padding packet inside a
    // frame would break its run of sequence numbers, and the browser could never assemble it.
    const from = sender.sent.length;
    output.forward(q.next('inter', false));
    vi.advanceTimersByTime(100);
    output.forward(q.next('rest', false));
    vi.advanceTimersByTime(100);
    output.forward(q.next('rest'));
    expect(sender.sent.slice(from, from + 3).map((p) => p.header.padding)).toEqual([false, false, false]);
    // The frame done, the probe pads again (what it could not send meanwhile, no more than one burst).
    vi.advanceTimersByTime(10);
    const after = sender.sent.slice(from + 3);
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((p) => p.header.padding)).toBe(true);
  });

  it('stops the probe at once when the viewer NACKs, and does not start it again', () => {
    startProbe();
    vi.advanceTimersByTime(400);
    expect(sender.padding().length).toBeGreaterThan(0);
    // Three packets asked again: a probe fails at the first loss or, with LinkEstimate's tolerance
    // for the odd late packet, at more than 2.
    sender.nack(1234, 1235, 1236);
    // At once, not at its next tick.
    expect(vi.getTimerCount()).toBe(0);
    const sent = sender.sent.length;
    vi.advanceTimersByTime(300);
    output.allocate(THREE);
    vi.advanceTimersByTime(300);
    expect(sender.sent).toHaveLength(sent);
  });

  it("stops the probe when another output of the viewer's page loses packets (one link), and holds that output's probes meanwhile", () => {
    const pages = new PageLinks();
    output.close();
    output = new VideoOutput(
      sender.asSender,
      CLOCK,
      (layer) => keyframes.push(layer),
      () => Date.now(),
      pages.join('page'),
    );
    const otherSender = new FakeSender(0x777);
    const other = new VideoOutput(
      otherSender.asSender,
      CLOCK,
      () => undefined,
      () => Date.now(),
      pages.join('page'),
    );
    const otherQ = new PresenterLayer(0, 0x4444, 5000, 20_000);
    otherSender.receiverEstimatedMaxBitrate = 200_000n;
    other.allocate(THREE);
    other.forward(otherQ.next('key'));
    startProbe();
    vi.advanceTimersByTime(400);
    expect(sender.padding().length).toBeGreaterThan(0);
    // The other output is ready to probe too (held its layer, estimate under the next): not while this one does.
    for (let t = 0; t < 600; t += 100) {
      vi.advanceTimersByTime(100);
      other.forward(otherQ.next('inter'));
      other.allocate(THREE);
    }
    expect(otherSender.padding()).toEqual([]);
    // The other output's viewer asks again for one packet: this probe filled the page's link.
    const padded = sender.padding().length;
    otherSender.nack(5003);
    vi.advanceTimersByTime(20);
    const ended = sender.padding().length;
    expect(ended - padded).toBeLessThanOrEqual(3);
    vi.advanceTimersByTime(300);
    expect(sender.padding()).toHaveLength(ended);
    other.close();
  });

  it("on a page seen carrying more but never found full, a probe pads up to its share; once the page is capped, the next layer's only", () => {
    // h only 30 kbit/s over q: its probe alone would pad 45 kbit/s.
    const layers: LayerState[] = [
      { rate: 100_000, flowing: true, width: 320, height: 180 },
      { rate: 130_000, flowing: true, width: 640, height: 360 },
      { rate: 1_000_000, flowing: true, width: 1280, height: 720 },
    ];
    /** Padding packets in 500 ms from the middle of a probe, on a page whose other output carried 1 Mbit/s. */
    const padded = (page: string, capped: boolean): number => {
      const links = new PageLinks();
      const viewer = new FakeSender(0x4242);
      const probing = new VideoOutput(
        viewer.asSender,
        CLOCK,
        () => undefined,
        () => Date.now(),
        links.join(page),
      );
      const other = links.join(page);
      other.rate = 100_000;
      expect(other.startProbe(Date.now())).toBe(true);
      other.probeEnded(true, 1_000_000, Date.now());
      if (capped) other.overloaded(Date.now());
      const layer = new PresenterLayer(0, 0x5151, 100, 1000);
      viewer.receiverEstimatedMaxBitrate = 120_000n;
      probing.allocate(layers);
      probing.forward(layer.next('key'));
      for (let t = 0; t < 1000; t += 100) {
        vi.advanceTimersByTime(100);
        probing.forward(layer.next('inter'));
        probing.allocate(layers);
      }
      vi.advanceTimersByTime(700);
      const before = viewer.padding().length;
      vi.advanceTimersByTime(500);
      probing.close();
      return viewer.padding().length - before;
    };
    // Its share of the 1 Mbit/s is 900 kbit/s, its own estimate 125 (the floor, q and a quarter):
    // it pads 125 kbit/s (29 packets of 267 bytes in 500 ms).
    const free = padded('free', false);
    expect(free).toBeGreaterThanOrEqual(27);
    expect(free).toBeLessThanOrEqual(32);
    // Capped: 1.5 × the 30 kbit/s h needs over q (11 packets).
    const full = padded('full', true);
    expect(full).toBeGreaterThanOrEqual(9);
    expect(full).toBeLessThanOrEqual(12);
  });

  it('with transport-wide feedback, reckons the link from it and no longer from the REMB', () => {
    output.allocate(THREE);
    output.forward(q.next('key'));
    sender.receiverEstimatedMaxBitrate = 10_000_000n;
    // q's packets for 1 s, each arriving 30 ms after it was sent, reported every 100 ms.
    const sentAt: number[] = [0];
    for (let t = 0; t < 1000; t += 10) {
      vi.advanceTimersByTime(10);
      output.forward(q.next('inter'));
      sentAt.push(Date.now());
      if (t % 100 === 90)
        sender.feedback(0, (i) => ((sentAt[i] ?? 0) <= Date.now() - 30 ? (sentAt[i] ?? 0) + 30 : undefined));
    }
    output.allocate(THREE);
    // Not the REMB's 10 Mbit/s: the unit's own start (100 kbit/s), a link it has not yet seen carry more.
    expect(output.estimate).toBeGreaterThanOrEqual(100_000);
    expect(output.estimate).toBeLessThan(150_000);
    expect(output.layers.target).toBe(0);
  });

  it('stops the probe when the feedback shows the link queueing, before any loss', () => {
    startProbe();
    const from = sender.sent.length;
    const sentAt = new Map<number, number>();
    let lastArrival = 0;
    // The link drains 150 kbit/s: the probe's padding queues in it (each packet later than the last).
    for (let t = 0; t < 500 && vi.getTimerCount() > 0; t += 10) {
      vi.advanceTimersByTime(10);
      for (let i = from; i < sender.sent.length; i++) {
        if (sentAt.has(i)) continue;
        const bytes = (sender.sent[i]?.payload.length ?? 0) + 24;
        lastArrival = Math.max(Date.now(), lastArrival) + (bytes * 8) / 150;
        sentAt.set(i, lastArrival);
      }
      if (t % 50 === 40) sender.feedback(from, (i) => sentAt.get(i));
    }
    expect(sender.padding().length).toBeGreaterThan(0);
    // Ended early, at the queue, with no packet asked again.
    expect(vi.getTimerCount()).toBe(0);
    expect(Date.now()).toBeLessThan(1000 + 600);
  });

  it('keeps probing through delay that climbs while the link still delivers all it is sent (a busy receiver)', () => {
    startProbe();
    const from = sender.sent.length;
    const arrivals = new Map<number, number>();
    // Every packet arrives, as fast as sent, but stamped later and later by up to 40 ms (a receiver
    // falling behind on its own clock, then catching up).
    for (let t = 0; t < 1150; t += 10) {
      vi.advanceTimersByTime(10);
      for (let i = from; i < sender.sent.length; i++) {
        if (!arrivals.has(i)) arrivals.set(i, Date.now() + 20 + ((Date.now() / 5) % 40));
      }
      if (t % 50 === 40) sender.feedback(from, (i) => arrivals.get(i));
    }
    // Still probing 1.15 s on, and it ends at its end (1.2 s).
    expect(vi.getTimerCount()).toBe(1);
    expect(sender.padding().length).toBeGreaterThan(100);
    vi.advanceTimersByTime(100);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('takes packets asked again on a link that keeps up (all delivered, as fast as sent) as late, not lost', () => {
    startProbe();
    const from = sender.sent.length;
    const arrivals = new Map<number, number>();
    for (let t = 0; t < 400; t += 10) {
      vi.advanceTimersByTime(10);
      for (let i = from; i < sender.sent.length; i++) if (!arrivals.has(i)) arrivals.set(i, Date.now() + 20);
      if (t % 50 === 40) sender.feedback(from, (i) => arrivals.get(i));
    }
    // A busy receiver asks again for three late packets: the probe goes on.
    sender.nack(1234, 1235, 1236);
    expect(vi.getTimerCount()).toBe(1);
    // The same once the link delivers slower than it is sent (a queue): it stops.
    let last = Date.now();
    for (let t = 0; t < 400; t += 10) {
      vi.advanceTimersByTime(10);
      for (let i = from; i < sender.sent.length; i++) {
        if (arrivals.has(i)) continue;
        last = Math.max(last, Date.now()) + 25;
        arrivals.set(i, last);
      }
      if (t % 50 === 40) sender.feedback(from, (i) => arrivals.get(i));
      if (vi.getTimerCount() === 0) break;
    }
    sender.nack(1300, 1301, 1302);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stops the probe when closed', () => {
    startProbe();
    vi.advanceTimersByTime(400);
    output.close();
    const sent = sender.sent.length;
    vi.advanceTimersByTime(1000);
    expect(sender.sent).toHaveLength(sent);
    expect(vi.getTimerCount()).toBe(0);
  });
});
