import { describe, expect, it } from 'vitest';
import { MAX_REORDER, RtpMunger } from './rtp-munger.js';

const CLOCK = 90_000;
const A = 0x1111;
const B = 0x2222;
/** 90 kHz ticks per 33 ms frame-ish step used below. */
const FRAME = 3000;

/** The output sequence number of a packet, or undefined when dropped (the answer copied out). */
function seq(munger: RtpMunger, ssrc: number, sequence: number, padding = false, now = 0): number | undefined {
  return munger.map(ssrc, sequence, 0, padding, now)?.sequenceNumber;
}

describe('RtpMunger', () => {
  it('drops everything before a source is chosen, then keeps the first source numbers as they are', () => {
    const munger = new RtpMunger(CLOCK);
    expect(munger.map(A, 1000, 5000, false, 0)).toBeUndefined();
    munger.switchTo(A, 1000, 5000, 0);
    expect(munger.source).toBe(A);
    expect({ ...munger.map(A, 1000, 5000, false, 0) }).toEqual({ sequenceNumber: 1000, timestamp: 5000 });
    expect({ ...munger.map(A, 1001, 5000 + FRAME, false, 33) }).toEqual({
      sequenceNumber: 1001,
      timestamp: 5000 + FRAME,
    });
    expect(munger.map(B, 1002, 5000, false, 40)).toBeUndefined();
  });

  it('numbers a new source on from the last output: seq + 1, timestamp moved on by the wall time', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 1000, 5000, 0);
    for (let i = 0; i < 10; i++) munger.map(A, 1000 + i, 5000 + i * FRAME, false, i * 33);
    // Last out: seq 1009, timestamp 5000 + 9 × 3000 at 297 ms; B's keyframe arrives at 347 ms.
    munger.switchTo(B, 40_000, 123_456, 347);
    expect({ ...munger.map(B, 40_000, 123_456, false, 347) }).toEqual({
      sequenceNumber: 1010,
      timestamp: 5000 + 9 * FRAME + 50 * 90,
    });
    expect({ ...munger.map(B, 40_001, 123_456 + FRAME, false, 380) }).toEqual({
      sequenceNumber: 1011,
      timestamp: 5000 + 10 * FRAME + 50 * 90,
    });
    // The old source, and the new one's packets from before the switch point, are dropped.
    expect(munger.map(A, 1010, 5000 + 10 * FRAME, false, 380)).toBeUndefined();
    expect(munger.map(B, 39_999, 123_456, false, 380)).toBeUndefined();
  });

  it('resumes the same source after a pause without the gap of the packets not forwarded', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 1000, 0);
    munger.map(A, 10, 1000, false, 0);
    // Packets 11 to 59 were not forwarded (the viewer paused); 60 is a keyframe 2 s later.
    munger.switchTo(A, 60, 1000 + 60 * FRAME, 2000);
    expect({ ...munger.map(A, 60, 1000 + 60 * FRAME, false, 2000) }).toEqual({
      sequenceNumber: 11,
      timestamp: 1000 + 2000 * 90,
    });
    expect(munger.map(A, 59, 1000, false, 2000)).toBeUndefined();
  });

  it('moves the timestamp on by at least one tick when no time passed', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 700, 0);
    munger.map(A, 10, 700, false, 5);
    munger.switchTo(B, 500, 9, 5);
    expect({ ...munger.map(B, 500, 9, false, 5) }).toEqual({ sequenceNumber: 11, timestamp: 701 });
  });

  it('continues across the 16-bit sequence and the 32-bit timestamp wraps', () => {
    const munger = new RtpMunger(CLOCK);
    const ts = 0xffff_ffff - FRAME;
    munger.switchTo(A, 65_533, ts, 0);
    const out = [65_533, 65_534, 65_535, 0, 1].map((s, i) => {
      const numbers = munger.map(A, s, (ts + i * FRAME) >>> 0, false, i * 33);
      return numbers && { ...numbers };
    });
    expect(out.map((n) => n?.sequenceNumber)).toEqual([65_533, 65_534, 65_535, 0, 1]);
    expect(out.map((n) => n?.timestamp)).toEqual([0, 1, 2, 3, 4].map((i) => (ts + i * FRAME) >>> 0));
    // A late packet from before the wrap still gets its number.
    expect(seq(munger, A, 65_535)).toBe(65_535);

    // A switch whose output crosses the wrap: B's numbers go on from 1 to 2, 3, ...
    munger.switchTo(B, 65_535, 0xffff_fff0, 4 * 33 + 10);
    expect({ ...munger.map(B, 65_535, 0xffff_fff0, false, 4 * 33 + 10) }).toEqual({
      sequenceNumber: 2,
      timestamp: (ts + 4 * FRAME + 10 * 90) >>> 0,
    });
    expect(seq(munger, B, 0)).toBe(3);
    expect(seq(munger, B, 1)).toBe(4);
  });

  it('renumbers from a source whose output is about to wrap', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 65_534, 0, 0);
    expect(seq(munger, A, 65_534)).toBe(65_534);
    expect(seq(munger, A, 65_535)).toBe(65_535);
    munger.switchTo(B, 300, 0, 10);
    expect(seq(munger, B, 300)).toBe(0);
    expect(seq(munger, B, 301)).toBe(1);
  });

  it('gives a late or retransmitted packet the number kept for it, and a duplicate the same number again', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    expect(seq(munger, A, 10)).toBe(10);
    expect(seq(munger, A, 12)).toBe(12);
    expect(seq(munger, A, 11)).toBe(11);
    expect(seq(munger, A, 11)).toBe(11);
    expect(seq(munger, A, 10)).toBe(10);
    expect(seq(munger, A, 12)).toBe(12);
  });

  it('answers in one reused object', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    const first = munger.map(A, 10, 0, false, 0);
    const second = munger.map(A, 11, 0, false, 0);
    expect(second).toBe(first);
    expect(munger.padding(1)).toBe(first);
  });

  it('drops a padding-only packet that is the newest without a gap in the output', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    expect(seq(munger, A, 10)).toBe(10);
    expect(seq(munger, A, 11, true)).toBeUndefined();
    expect(seq(munger, A, 12)).toBe(11);
    // A run of padding, then media.
    for (const s of [13, 14, 15]) expect(seq(munger, A, s, true)).toBeUndefined();
    expect(seq(munger, A, 16)).toBe(12);
    // Late duplicates: the media keep their numbers, the padding stays dropped.
    expect(seq(munger, A, 12)).toBe(11);
    expect(seq(munger, A, 14, true)).toBeUndefined();
    expect(seq(munger, A, 11, true)).toBeUndefined();
  });

  it('numbers a media packet arriving after a newer padding packet was dropped in the slot kept for it', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    expect(seq(munger, A, 10)).toBe(10);
    expect(seq(munger, A, 12, true)).toBeUndefined(); // 11 not here yet: its slot (11) is kept
    expect(seq(munger, A, 13)).toBe(12); // takes the dropped padding's slot
    expect(seq(munger, A, 11)).toBe(11);
  });

  it('forwards a padding packet arriving late into its kept slot rather than leave a hole', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    expect(seq(munger, A, 10)).toBe(10);
    expect(seq(munger, A, 12)).toBe(12);
    expect(seq(munger, A, 11, true)).toBe(11);
  });

  it('leaves no gap at a switch after the old source ended with padding, and keeps real gaps', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    seq(munger, A, 10);
    seq(munger, A, 11, true);
    munger.switchTo(B, 900, 0, 10);
    expect(seq(munger, B, 900)).toBe(11);
    // B's 901 is lost; 902 keeps the gap (the viewer may NACK it); the next source follows 903.
    expect(seq(munger, B, 902)).toBe(13);
    munger.switchTo(A, 50, 0, 20);
    expect(seq(munger, A, 50)).toBe(14);
  });

  it("numbers the unit's own padding on from the last packet with its timestamp; later packets move on", () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 7000, 0);
    munger.map(A, 10, 7000, false, 0);
    expect({ ...munger.padding(5) }).toEqual({ sequenceNumber: 11, timestamp: 7000 });
    expect({ ...munger.map(A, 11, 7000 + FRAME, false, 33) }).toEqual({ sequenceNumber: 12, timestamp: 7000 + FRAME });
    expect({ ...munger.padding(40) }).toEqual({ sequenceNumber: 13, timestamp: 7000 + FRAME });
    expect({ ...munger.padding(41) }).toEqual({ sequenceNumber: 14, timestamp: 7000 + FRAME });
    expect(seq(munger, A, 12)).toBe(15);
    // Late duplicates keep their numbers across the inserted padding.
    expect(seq(munger, A, 11)).toBe(12);
    expect(seq(munger, A, 10)).toBe(10);
  });

  it("keeps a lost packet's slot when the unit pads after the gap", () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 10, 0, 0);
    seq(munger, A, 10);
    expect(seq(munger, A, 12)).toBe(12);
    expect(munger.padding(1).sequenceNumber).toBe(13);
    expect(seq(munger, A, 11)).toBe(11);
    expect(seq(munger, A, 13)).toBe(14);
    // Padding dropped after unit padding, then media: still no gap and no collision.
    expect(seq(munger, A, 14, true)).toBeUndefined();
    expect(munger.padding(2).sequenceNumber).toBe(15);
    expect(seq(munger, A, 15)).toBe(16);
    expect(seq(munger, A, 13)).toBe(14);
  });

  it('starts the stream at 0 when the unit pads before any video, and numbers the first source on from it', () => {
    const munger = new RtpMunger(CLOCK);
    expect({ ...munger.padding(0) }).toEqual({ sequenceNumber: 0, timestamp: 0 });
    munger.switchTo(A, 5000, 1234, 100);
    expect({ ...munger.map(A, 5000, 1234, false, 100) }).toEqual({ sequenceNumber: 1, timestamp: 9000 });
  });

  it('drops a packet more than MAX_REORDER behind the newest', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 0, 0, 0);
    for (let s = 0; s <= MAX_REORDER + 10; s++) seq(munger, A, s);
    expect(seq(munger, A, 10)).toBe(10);
    expect(seq(munger, A, 9)).toBeUndefined();
  });

  it('drops a late packet older than the edits it can still remember, and numbers newer late ones right', () => {
    const munger = new RtpMunger(CLOCK);
    munger.switchTo(A, 0, 0, 0);
    // Media at even numbers, padding at odd ones, one edit each: 100 edits, more than the ring holds.
    // Packet 0 is held back (late).
    for (let s = 1; s < 200; s++) seq(munger, A, s, s % 2 === 1);
    expect(seq(munger, A, 0)).toBeUndefined();
    // Media 2k went out as k (packet 0's slot 0 is kept); a late duplicate of a recent one agrees.
    expect(seq(munger, A, 198)).toBe(99);
    expect(seq(munger, A, 196)).toBe(98);
    expect(seq(munger, A, 200)).toBe(100);
  });
});
