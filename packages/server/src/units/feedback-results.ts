/**
 * What a viewer's browser says of each packet in its transport-wide feedback: whether it arrived
 * and when (µs on the browser's clock; only differences between them mean anything).
 *
 * Read from werift's parsed feedback rather than its `packetResults`, which in 0.24 leaves out
 * status-vector chunks (Chromium sends them whenever received and lost packets mix) and so pairs
 * the arrival deltas with the wrong packets.
 */
import { RunLengthChunk, type TransportWideCC } from 'werift';

/** Packet statuses (the draft's two bits) of a packet received with a small or a large delta; 0 is not received. */
const SMALL_DELTA = 1;
const LARGE_DELTA = 2;
/** A 1-bit status vector's 1 means received with a small delta. */
const ONE_BIT = 0;
/** The reference time counts 64 ms. */
const REFERENCE_US = 64_000;

export interface PacketResult {
  /** The transport sequence number (16 bits). */
  sequence: number;
  /** When it arrived (µs, the browser's clock), or undefined when it did not. */
  arrivalUs: number | undefined;
}

/** Each packet the feedback covers, in order, with its arrival. */
export function feedbackResults(feedback: TransportWideCC): PacketResult[] {
  const statuses: number[] = [];
  const count = feedback.packetStatusCount;
  for (const chunk of feedback.packetChunks) {
    if (chunk instanceof RunLengthChunk) {
      for (let i = 0; i < chunk.runLength && statuses.length < count; i++) statuses.push(chunk.packetStatus);
    } else {
      const oneBit = chunk.symbolSize === ONE_BIT;
      for (const symbol of chunk.symbolList) {
        if (statuses.length >= count) break;
        statuses.push(oneBit && symbol === 1 ? SMALL_DELTA : symbol);
      }
    }
  }
  const results: PacketResult[] = [];
  let at = feedback.referenceTime * REFERENCE_US;
  let delta = 0;
  for (let i = 0; i < statuses.length; i++) {
    const status = statuses[i];
    const sequence = (feedback.baseSequenceNumber + i) & 0xffff;
    // Not received (0), or received without a time (3, which browsers do not send).
    if (status !== SMALL_DELTA && status !== LARGE_DELTA) {
      results.push({ sequence, arrivalUs: undefined });
      continue;
    }
    const recv = feedback.recvDeltas[delta++];
    // A feedback cut short (fewer deltas than statuses) says nothing more.
    if (!recv) break;
    at += recv.delta;
    results.push({ sequence, arrivalUs: at });
  }
  return results;
}
