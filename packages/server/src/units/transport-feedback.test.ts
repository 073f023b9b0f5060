import { describe, expect, it } from 'vitest';
import { RtcpPacketConverter, RtcpTransportLayerFeedback, TransportWideCC } from 'werift';
import { MAX_HELD, TransportFeedback } from './transport-feedback.js';

const SENDER = 0x11223344;
const MEDIA = 0x55667788;
/** 64 ms, the reference time's unit, in µs. */
const REF = 64_000;

/** Each packet as the draft defines it: its status and, when received, its arrival (µs) rebuilt from the deltas. */
function decode(packet: Buffer) {
  expect(packet.length % 4).toBe(0);
  const first = packet.readUInt8(0);
  expect(first >> 6).toBe(2); // version
  expect(first & 0x1f).toBe(15); // FMT: transport-wide CC
  expect(packet[1]).toBe(205); // RTPFB
  expect((packet.readUInt16BE(2) + 1) * 4).toBe(packet.length);
  const padded = (first & 0x20) !== 0;
  const end = padded ? packet.length - packet.readUInt8(packet.length - 1) : packet.length;
  const base = packet.readUInt16BE(12);
  const count = packet.readUInt16BE(14);
  const reference = packet.readUIntBE(16, 3);
  const statuses: number[] = [];
  let offset = 20;
  while (statuses.length < count) {
    const chunk = packet.readUInt16BE(offset);
    offset += 2;
    expect(chunk >> 15).toBe(0); // run-length chunks only
    for (let i = 0; i < (chunk & 0x1fff); i++) statuses.push((chunk >> 13) & 3);
  }
  expect(statuses.length).toBe(count);
  let at = reference * REF;
  const packets = statuses.map((status, i) => {
    const sequence = (base + i) & 0xffff;
    if (status === 0) return { sequence, received: false as const };
    const delta = status === 1 ? packet.readUInt8(offset) : packet.readInt16BE(offset);
    offset += status === 1 ? 1 : 2;
    at += delta * 250;
    return { sequence, received: true as const, at };
  });
  expect(offset).toBe(end);
  return {
    sender: packet.readUInt32BE(4),
    media: packet.readUInt32BE(8),
    base,
    reference,
    feedbackCount: packet[19],
    packets,
  };
}

describe('TransportFeedback', () => {
  it('reports nothing before a packet arrives, then each arrival on the 250 µs grid from the 64 ms reference', () => {
    const feedback = new TransportFeedback(SENDER);
    expect(feedback.take(MEDIA)).toBeUndefined();
    // 10.0 s + 100 µs: the reference is 156 (9.984 s); the first delta counts from there.
    const t0 = 10_000_100;
    feedback.received(7, t0);
    feedback.received(8, t0 + 1_000);
    feedback.received(9, t0 + 70_000); // 70 ms: over 255 × 250 µs, a large delta
    const decoded = decode(feedback.take(MEDIA) as Buffer);
    expect(decoded).toMatchObject({ sender: SENDER, media: MEDIA, base: 7, reference: 156, feedbackCount: 0 });
    expect(decoded.packets).toEqual([
      { sequence: 7, received: true, at: 10_000_000 },
      { sequence: 8, received: true, at: 10_001_000 },
      { sequence: 9, received: true, at: 10_070_000 },
    ]);
    expect(feedback.take(MEDIA)).toBeUndefined();
  });

  it('keeps every arrival within 125 µs of the truth over many feedbacks (no rounding adds up, no 64 ms error)', () => {
    const feedback = new TransportFeedback(SENDER);
    let sequence = 0;
    for (let round = 0; round < 50; round++) {
      const sent: Array<{ sequence: number; at: number }> = [];
      for (let i = 0; i < 7; i++) {
        const at = 5_000_000 + round * 50_000 + i * 3_333 + (round % 3) * 77;
        feedback.received(sequence, at);
        sent.push({ sequence, at });
        sequence++;
      }
      const decoded = decode(feedback.take(MEDIA) as Buffer);
      expect(decoded.feedbackCount).toBe(round);
      expect(decoded.packets.map((p) => p.sequence)).toEqual(sent.map((p) => p.sequence));
      decoded.packets.forEach((p, i) => {
        expect(p.received).toBe(true);
        expect(Math.abs((p.received ? p.at : 0) - (sent[i]?.at ?? Number.NaN))).toBeLessThanOrEqual(125);
      });
    }
  });

  it('reports lost packets as not received, here and across feedbacks, and a packet arriving out of order with a negative delta', () => {
    const feedback = new TransportFeedback(SENDER);
    feedback.received(100, 1_000_000);
    feedback.received(101, 1_001_000);
    expect(decode(feedback.take(MEDIA) as Buffer).packets.map((p) => p.sequence)).toEqual([100, 101]);
    // 102 and 103 lost; 105 before 104.
    feedback.received(105, 1_010_000);
    feedback.received(104, 1_011_000);
    const decoded = decode(feedback.take(MEDIA) as Buffer);
    expect(decoded.base).toBe(102);
    expect(decoded.packets).toEqual([
      { sequence: 102, received: false },
      { sequence: 103, received: false },
      { sequence: 104, received: true, at: 1_011_000 },
      // 1 ms before the one listed ahead of it: a negative (large) delta.
      { sequence: 105, received: true, at: 1_010_000 },
    ]);
    // 103 turning up now was already reported lost: not reported again.
    feedback.received(103, 1_020_000);
    expect(feedback.take(MEDIA)).toBeUndefined();
  });

  it('carries the 16-bit sequence number across its wrap', () => {
    const feedback = new TransportFeedback(SENDER);
    feedback.received(65_534, 2_000_000);
    feedback.received(65_535, 2_001_000);
    feedback.received(1, 2_002_000); // 0 lost
    const decoded = decode(feedback.take(MEDIA) as Buffer);
    expect(decoded.base).toBe(65_534);
    expect(decoded.packets.map((p) => [p.sequence, p.received])).toEqual([
      [65_534, true],
      [65_535, true],
      [0, false],
      [1, true],
    ]);
    feedback.received(2, 2_003_000);
    expect(decode(feedback.take(MEDIA) as Buffer).base).toBe(2);
  });

  it('puts at most 1000 packets in one feedback and the rest in the next', () => {
    const feedback = new TransportFeedback(SENDER);
    for (let i = 0; i < 1500; i++) feedback.received(i, 3_000_000 + i * 100);
    const first = decode(feedback.take(MEDIA) as Buffer);
    expect(first.packets).toHaveLength(1000);
    const second = decode(feedback.take(MEDIA) as Buffer);
    expect(second.base).toBe(1000);
    expect(second.packets).toHaveLength(500);
    // 149.9 ms after the first, on the 250 µs grid.
    expect(second.packets.at(-1)).toEqual({ sequence: 1499, received: true, at: 3_150_000 });
  });

  it('holds at most MAX_HELD arrivals between feedbacks: those past it are reported lost', () => {
    const feedback = new TransportFeedback(SENDER);
    // Numbering that jumps 1001 ahead each packet (a sender gone wrong): each feedback lists one run.
    for (let i = 0; i < MAX_HELD + 500; i++) feedback.received((i * 1001) & 0xffff, 3_000_000 + i);
    let feedbacks = 0;
    let received = 0;
    for (let packet = feedback.take(MEDIA); packet && feedbacks < 2 * MAX_HELD; packet = feedback.take(MEDIA)) {
      feedbacks++;
      received += decode(packet).packets.filter((p) => p.received).length;
    }
    expect(received).toBeLessThanOrEqual(MAX_HELD);
    expect(feedback.take(MEDIA)).toBeUndefined();
  });

  it('skips a gap too long to list, and starts a new feedback where arrivals are over 8 s apart', () => {
    const feedback = new TransportFeedback(SENDER);
    feedback.received(0, 1_000_000);
    feedback.take(MEDIA);
    feedback.received(5_000, 2_000_000);
    expect(decode(feedback.take(MEDIA) as Buffer).base).toBe(5_000);
    feedback.received(5_001, 2_001_000);
    feedback.received(5_002, 12_000_000); // 10 s on: beyond a 16-bit delta
    const before = decode(feedback.take(MEDIA) as Buffer);
    expect(before.packets.map((p) => p.sequence)).toEqual([5_001]);
    const after = decode(feedback.take(MEDIA) as Buffer);
    expect(after.packets).toEqual([{ sequence: 5_002, received: true, at: 12_000_000 }]);
  });

  it('is read the same by werift’s own RTCP parser', () => {
    const feedback = new TransportFeedback(SENDER);
    feedback.received(10, 4_000_000);
    feedback.received(12, 4_000_500);
    feedback.received(13, 4_100_000);
    const packet = feedback.take(MEDIA) as Buffer;
    const [parsed] = RtcpPacketConverter.deSerialize(packet);
    expect(parsed).toBeInstanceOf(RtcpTransportLayerFeedback);
    const twcc = (parsed as RtcpTransportLayerFeedback).feedback;
    expect(twcc).toBeInstanceOf(TransportWideCC);
    expect(twcc).toMatchObject({
      senderSsrc: SENDER,
      mediaSourceSsrc: MEDIA,
      baseSequenceNumber: 10,
      packetStatusCount: 4,
      referenceTime: 62,
    });
    expect((twcc as TransportWideCC).recvDeltas.map((d) => d.delta)).toEqual([4_000_000 - 62 * REF, 500, 99_500]);
  });
});
