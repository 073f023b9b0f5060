import { describe, expect, it } from 'vitest';
import { RecvDelta, RtcpPacketConverter, RtcpTransportLayerFeedback, RunLengthChunk, TransportWideCC } from 'werift';
import { feedbackResults } from './feedback-results.js';
import { TransportFeedback } from './transport-feedback.js';

/** werift's parse of a transport-wide feedback packet, as a viewer's sender gets it. */
function parsed(packet: Buffer): TransportWideCC {
  const [rtcp] = RtcpPacketConverter.deSerialize(packet);
  if (!(rtcp instanceof RtcpTransportLayerFeedback) || !(rtcp.feedback instanceof TransportWideCC)) {
    throw new Error('not transport-wide feedback');
  }
  return rtcp.feedback;
}

describe('feedbackResults', () => {
  it('reads each packet of run-length chunks, lost ones without an arrival, times from the reference on', () => {
    const builder = new TransportFeedback(1);
    // 64 ms units: 3 * 64_000 µs is the reference; then 1 ms, a loss, 70 ms later (a large delta).
    builder.received(10, 192_000);
    builder.received(11, 193_000);
    builder.received(13, 263_000);
    const results = feedbackResults(parsed(builder.take(2) as Buffer));
    expect(results).toEqual([
      { sequence: 10, arrivalUs: 192_000 },
      { sequence: 11, arrivalUs: 193_000 },
      { sequence: 12, arrivalUs: undefined },
      { sequence: 13, arrivalUs: 263_000 },
    ]);
  });

  it('reads status-vector chunks (1-bit and 2-bit), which werift 0.24 leaves out of its own results', () => {
    // Written byte by byte as a browser sends it: 9 packets from 65534 (wrapping), reference 1 (64 ms).
    const twoBit = (symbols: number[]) =>
      symbols.reduce((chunk, symbol, i) => chunk | (symbol << (12 - 2 * i)), 0xc000);
    const oneBit = (symbols: number[]) => symbols.reduce((chunk, symbol, i) => chunk | (symbol << (13 - i)), 0x8000);
    const body = Buffer.alloc(16 + 4 + 5 + 3);
    body.writeUInt32BE(1, 0); // sender SSRC
    body.writeUInt32BE(2, 4); // media SSRC
    body.writeUInt16BE(65_534, 8);
    body.writeUInt16BE(9, 10);
    body.writeUIntBE(1, 12, 3);
    body.writeUInt8(0, 15);
    // small, lost, large, small, lost, lost, lost
    body.writeUInt16BE(twoBit([1, 0, 2, 1, 0, 0, 0]), 16);
    // received (small), then not; only 2 of the 14 are inside the count
    body.writeUInt16BE(oneBit([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 18);
    body.writeUInt8(2, 20); // +500 µs
    body.writeInt16BE(-4, 21); // -1000 µs
    body.writeUInt8(1, 23); // +250 µs
    body.writeUInt8(255, 24); // +63750 µs
    const header = Buffer.from([0x80 | 15, 205, 0, body.length / 4]);
    const results = feedbackResults(parsed(Buffer.concat([header, body])));
    expect(results).toEqual([
      { sequence: 65_534, arrivalUs: 64_500 },
      { sequence: 65_535, arrivalUs: undefined },
      { sequence: 0, arrivalUs: 63_500 },
      { sequence: 1, arrivalUs: 63_750 },
      { sequence: 2, arrivalUs: undefined },
      { sequence: 3, arrivalUs: undefined },
      { sequence: 4, arrivalUs: undefined },
      { sequence: 5, arrivalUs: 127_500 },
      { sequence: 6, arrivalUs: undefined },
    ]);
  });

  it('stops where a cut-short feedback has no more arrival deltas', () => {
    const feedback = new TransportWideCC({
      baseSequenceNumber: 5,
      packetStatusCount: 3,
      referenceTime: 0,
      packetChunks: [new RunLengthChunk({ type: 0, packetStatus: 1, runLength: 3 })],
      recvDeltas: [new RecvDelta({ type: 1, delta: 250 })],
    });
    expect(feedbackResults(feedback)).toEqual([{ sequence: 5, arrivalUs: 250 }]);
  });
});
