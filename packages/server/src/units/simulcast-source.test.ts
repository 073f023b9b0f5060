import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MediaStreamTrack, type RTCRtpReceiver, RtpHeader, RtpPacket } from 'werift';
import { type LayerPacket, SimulcastSource } from './simulcast-source.js';

/** The presenter's SSRCs for q, h and f. */
const Q = 0x1111;
const H = 0x2222;
const F = 0x3333;

/** A VP8 keyframe's first packet (descriptor S=1 PID=0, frame tag P=0, start code, sizes), `size` bytes. */
function keyframe(width: number, height: number, size = 20): Buffer {
  const payload = Buffer.alloc(size);
  payload.set([0x10, 0x00, 0x00, 0x00, 0x9d, 0x01, 0x2a]);
  payload.writeUInt16LE(width, 7);
  payload.writeUInt16LE(height, 9);
  return payload;
}

/** A VP8 interframe's first packet (frame tag P=1), `size` bytes. */
function interframe(size = 20): Buffer {
  const payload = Buffer.alloc(size);
  payload.set([0x10, 0x01, 0x00, 0x00]);
  return payload;
}

function rtp(ssrc: number, sequenceNumber: number, payload: Buffer): RtpPacket {
  return new RtpPacket(
    new RtpHeader({ ssrc, sequenceNumber, timestamp: sequenceNumber * 3000, payloadType: 96 }),
    payload,
  );
}

function video(rid: string): MediaStreamTrack {
  return new MediaStreamTrack({ kind: 'video', rid });
}

/** A werift receiver as SimulcastSource reads it: its tracks. */
function receiver(tracks: MediaStreamTrack[]): RTCRtpReceiver {
  return { tracks } as unknown as RTCRtpReceiver;
}

describe('SimulcastSource', () => {
  let packets: LayerPacket[];
  let plis: Array<{ ssrc: number; at: number }>;
  let source: SimulcastSource;

  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
    packets = [];
    plis = [];
    source = new SimulcastSource(
      (packet) => packets.push(packet),
      (ssrc) => plis.push({ ssrc, at: Date.now() }),
      () => Date.now(),
    );
  });

  afterEach(() => {
    source.detach();
    vi.useRealTimers();
  });

  it('orders the layers as the receiver tracks its video, and marks each packet with its layer', () => {
    const [q, h, f] = [video('q'), video('h'), video('f')];
    const audio = new MediaStreamTrack({ kind: 'audio' });
    source.attach(receiver([q, audio, h, f]), q);
    expect(source.count).toBe(3);
    expect(source.live).toBe(true);

    f.onReceiveRtp.execute(rtp(F, 1, interframe()));
    q.onReceiveRtp.execute(rtp(Q, 1, interframe()));
    h.onReceiveRtp.execute(rtp(H, 1, keyframe(640, 360)));
    expect(packets.map((p) => [p.layer, p.rtp.header.ssrc])).toEqual([
      [2, F],
      [0, Q],
      [1, H],
    ]);
    expect(packets.every((p) => !p.single && !p.paddingOnly)).toBe(true);
    expect(packets[0]?.vp8).toMatchObject({ startOfFrame: true, keyframe: false });
    expect(packets[2]?.vp8).toMatchObject({ startOfFrame: true, keyframe: true, width: 640, height: 360 });
  });

  it('takes the one track it is given when the receiver has no video tracks: one layer, single', () => {
    const only = new MediaStreamTrack({ kind: 'video' });
    source.attach(receiver([]), only);
    expect(source.count).toBe(1);
    only.onReceiveRtp.execute(rtp(Q, 5, interframe()));
    expect(packets).toHaveLength(1);
    expect(packets[0]).toMatchObject({ layer: 0, single: true, paddingOnly: false });
  });

  it('reads a packet without payload as padding only, and a payload that is no VP8 as no switch point', () => {
    const q = video('q');
    source.attach(receiver([q, video('h')]), q);
    q.onReceiveRtp.execute(rtp(Q, 1, Buffer.alloc(0)));
    q.onReceiveRtp.execute(rtp(Q, 2, Buffer.from([0x10])));
    expect(packets[0]).toMatchObject({ paddingOnly: true, vp8: undefined });
    expect(packets[1]).toMatchObject({ paddingOnly: false, vp8: undefined });
  });

  it('reports each layer rate (at least twice the one below), whether it flows and its last keyframe size', () => {
    const [q, h, f] = [video('q'), video('h'), video('f')];
    source.attach(receiver([q, h, f]), q);
    vi.advanceTimersByTime(1000);
    // At 1000 ms the window's span is 900 ms (its 9 full buckets and an empty current one).
    for (let i = 0; i < 9; i++) q.onReceiveRtp.execute(rtp(Q, i, i === 0 ? keyframe(320, 180, 88) : interframe(88)));
    h.onReceiveRtp.execute(rtp(H, 1, interframe(88)));
    for (let i = 0; i < 9; i++) {
      f.onReceiveRtp.execute(rtp(F, i, i === 0 ? keyframe(1280 | 0x4000, 720 | 0x8000, 988) : interframe(988)));
    }
    const states = source.states();
    // q: 9 × 100 bytes in 900 ms; h: 100 bytes (889 bit/s) read as twice q; f: 9 × 1000 bytes.
    expect(states).toEqual([
      { rate: 8000, flowing: true, width: 320, height: 180 },
      { rate: 16_000, flowing: true },
      { rate: 80_000, flowing: true, width: 1280, height: 720 },
    ]);

    // A newer keyframe changes the size; the layers stop flowing a window after their last packet.
    vi.advanceTimersByTime(500);
    q.onReceiveRtp.execute(rtp(Q, 9, keyframe(160, 90)));
    vi.advanceTimersByTime(500);
    expect(source.states().map((s) => s.flowing)).toEqual([true, true, true]);
    expect(source.states()[0]).toMatchObject({ width: 160, height: 90 });
    vi.advanceTimersByTime(1);
    expect(source.states().map((s) => s.flowing)).toEqual([true, false, false]);
    vi.advanceTimersByTime(500);
    expect(source.states().map((s) => s.flowing)).toEqual([false, false, false]);
  });

  it('asks for a layer keyframe before its first packet once that packet names its SSRC', () => {
    const [q, h] = [video('q'), video('h')];
    source.attach(receiver([q, h]), q);
    source.requestKeyframe(1);
    source.requestKeyframe(1);
    vi.advanceTimersByTime(2000);
    expect(plis).toEqual([]);

    q.onReceiveRtp.execute(rtp(Q, 1, interframe()));
    expect(plis).toEqual([]);
    h.onReceiveRtp.execute(rtp(H, 1, interframe()));
    expect(plis).toEqual([{ ssrc: H, at: 2000 }]);
    h.onReceiveRtp.execute(rtp(H, 2, interframe()));
    expect(plis).toHaveLength(1);
  });

  it('paces keyframe requests: one per 500 ms per layer, a burst in between goes out once at its end', () => {
    const [q, h, f] = [video('q'), video('h'), video('f')];
    source.attach(receiver([q, h, f]), q);
    q.onReceiveRtp.execute(rtp(Q, 1, interframe()));
    h.onReceiveRtp.execute(rtp(H, 1, interframe()));
    f.onReceiveRtp.execute(rtp(F, 1, interframe()));

    source.requestKeyframe(0);
    expect(plis).toEqual([{ ssrc: Q, at: 0 }]);
    vi.advanceTimersByTime(100);
    for (let i = 0; i < 5; i++) source.requestKeyframe(0);
    // Another layer is paced on its own.
    source.requestKeyframe(1);
    expect(plis).toEqual([
      { ssrc: Q, at: 0 },
      { ssrc: H, at: 100 },
    ]);
    vi.advanceTimersByTime(399);
    expect(plis).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(plis).toEqual([
      { ssrc: Q, at: 0 },
      { ssrc: H, at: 100 },
      { ssrc: Q, at: 500 },
    ]);

    // All layers at 600 ms: h (last at 100) and f (never) at once, q (last at 500) at 1000.
    vi.advanceTimersByTime(100);
    source.requestKeyframe();
    expect(plis.slice(3)).toEqual([
      { ssrc: H, at: 600 },
      { ssrc: F, at: 600 },
    ]);
    vi.advanceTimersByTime(1000);
    expect(plis.slice(5)).toEqual([{ ssrc: Q, at: 1000 }]);

    // A layer that does not exist is no request.
    source.requestKeyframe(7);
    vi.advanceTimersByTime(1000);
    expect(plis).toHaveLength(6);
  });

  it("takes a layer's keyframe that came for another layer's request as its own: no request for 500 ms, and one waiting is served", () => {
    const [q, h, f] = [video('q'), video('h'), video('f')];
    source.attach(receiver([q, h, f]), q);
    q.onReceiveRtp.execute(rtp(Q, 1, interframe()));
    h.onReceiveRtp.execute(rtp(H, 1, interframe()));
    f.onReceiveRtp.execute(rtp(F, 1, interframe()));
    source.requestKeyframe(1);
    expect(plis).toEqual([{ ssrc: H, at: 0 }]);
    // The browser answers with a keyframe on every layer.
    vi.advanceTimersByTime(80);
    for (const [track, ssrc, width] of [
      [q, Q, 320],
      [h, H, 640],
      [f, F, 1280],
    ] as const) {
      track.onReceiveRtp.execute(rtp(ssrc, 2, keyframe(width, (width * 9) / 16)));
    }
    // A viewer moving to f asks 20 ms later: f's keyframe came, and the next is 500 ms after it.
    vi.advanceTimersByTime(20);
    source.requestKeyframe(2);
    vi.advanceTimersByTime(479);
    expect(plis).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(plis).toEqual([
      { ssrc: H, at: 0 },
      { ssrc: F, at: 580 },
    ]);
    // q asked for again soon after its own request: paced; a keyframe of q that comes meanwhile
    // (for another layer's request) serves it, and the paced request is dropped.
    vi.advanceTimersByTime(420);
    source.requestKeyframe(0);
    expect(plis.at(-1)).toEqual({ ssrc: Q, at: 1000 });
    vi.advanceTimersByTime(100);
    source.requestKeyframe(0);
    vi.advanceTimersByTime(100);
    q.onReceiveRtp.execute(rtp(Q, 3, keyframe(320, 180)));
    vi.advanceTimersByTime(1000);
    expect(plis).toEqual([
      { ssrc: H, at: 0 },
      { ssrc: F, at: 580 },
      { ssrc: Q, at: 1000 },
    ]);
  });

  it('reads a layer that stopped (dynacast) at the rate it last sent settled, and one that resumes at least at that for 3 s', () => {
    const [q, h, f] = [video('q'), video('h'), video('f')];
    source.attach(receiver([q, h, f]), q);
    // Each layer sends 10 packets a second for 4 s: q 8 kbit/s, h 16, f 80 (five times h).
    let seq = 0;
    const second = (layers: Array<[MediaStreamTrack, number, number]>) => {
      for (let i = 0; i < 10; i++) {
        seq++;
        for (const [track, ssrc, bytes] of layers) track.onReceiveRtp.execute(rtp(ssrc, seq, interframe(bytes)));
        vi.advanceTimersByTime(100);
        source.states();
      }
    };
    const all: Array<[MediaStreamTrack, number, number]> = [
      [q, Q, 88],
      [h, H, 188],
      [f, F, 988],
    ];
    for (let s = 0; s < 4; s++) second(all);
    expect(source.states().map((state) => Math.round(state.rate / 1000))).toEqual([8, 16, 80]);
    // f stops: read at the 80 kbit/s it sent, not twice h.
    for (let s = 0; s < 3; s++) second(all.slice(0, 2));
    expect(source.states().map((state) => [Math.round(state.rate / 1000), state.flowing])).toEqual([
      [8, true],
      [16, true],
      [80, false],
    ]);
    // It resumes low (its encoder ramps): read at 80 until it has flowed 3 s, then at what it sends.
    const low: Array<[MediaStreamTrack, number, number]> = [...all.slice(0, 2), [f, F, 388]];
    second(low);
    expect(source.states()[2]).toMatchObject({ rate: 80_000, flowing: true });
    second(low);
    second(low);
    second(low);
    // 31 kbit/s sent; read as twice h's 16.
    expect(Math.round((source.states()[2]?.rate ?? 0) / 1000)).toBe(32);
  });

  it('detaches: no more packets, and a paced request waiting is dropped', () => {
    const q = video('q');
    source.attach(receiver([q, video('h')]), q);
    q.onReceiveRtp.execute(rtp(Q, 1, interframe()));
    source.requestKeyframe(0);
    vi.advanceTimersByTime(100);
    source.requestKeyframe(0);
    source.detach();
    expect(source.live).toBe(false);
    expect(source.count).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(plis).toHaveLength(1);
    q.onReceiveRtp.execute(rtp(Q, 2, interframe()));
    expect(packets).toHaveLength(1);
  });
});
