/**
 * Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01):
 * the receiver tells the sender when each packet arrived (by its transport sequence number), and the
 * sender's bandwidth estimator (Chromium's GoogCC) ramps its rate up while delays stay flat.
 *
 * Written here, not taken from werift 0.24: its ReceiverTWCC, once negotiated, sends feedback whose
 * first arrival is off by up to 64 ms (deltas count from the exact last arrival, the reference time
 * is that arrival rounded down to 64 ms), marks lost packets as received (so the deltas no longer
 * match the statuses) and breaks when the sequence number wraps. Chromium reads that as noisy delay
 * and holds its rate near the start. This builder counts every delta from the 250 µs grid it sends,
 * reports lost packets as such and carries the sequence number across the wrap.
 */

/** The RTCP packet type of transport-layer feedback (RFC 4585) and the format of this one. */
const RTPFB = 205;
const FMT_TRANSPORT_CC = 15;
/** Units of the packet: receive deltas in 250 µs, the reference time in 64 ms. */
const DELTA_US = 250;
const REFERENCE_US = 64_000;
const DELTAS_PER_REFERENCE = REFERENCE_US / DELTA_US;
/** Packet statuses of a chunk. */
const NOT_RECEIVED = 0;
const SMALL_DELTA = 1;
const LARGE_DELTA = 2;
/** A run-length chunk holds at most this many packets (13 bits). */
const MAX_RUN = 0x1fff;
/** At most this many packets in one feedback, so it fits one datagram whatever the loss. */
const MAX_PACKETS = 1000;
/**
 * Arrivals held between feedbacks at most: a sender whose numbering jumps about (or floods) cannot
 * make the unit hold more; packets past it are reported lost, which slows the sender down.
 */
export const MAX_HELD = 8192;

type Status = typeof NOT_RECEIVED | typeof SMALL_DELTA | typeof LARGE_DELTA;

export class TransportFeedback {
  /** Arrival time (µs, monotonic) of each packet not yet reported, by extended sequence number. */
  private readonly arrivals = new Map<number, number>();
  /** The highest sequence number seen, extended past 16 bits. */
  private highest: number | undefined;
  /** The first sequence number the next feedback covers (all before it are reported). */
  private next: number | undefined;
  private feedbackCount = 0;

  /** @param senderSsrc the SSRC the feedback is sent as (the receiver's RTCP SSRC). */
  constructor(private readonly senderSsrc: number) {}

  /** Records a packet's transport sequence number and when it arrived (µs, monotonic). */
  received(sequence: number, arrivalUs: number): void {
    const extended = this.extend(sequence);
    // Already reported (as lost, or a duplicate): the sender has moved on from it.
    if (this.next !== undefined && extended < this.next) return;
    if (this.arrivals.size >= MAX_HELD) return;
    if (!this.arrivals.has(extended)) this.arrivals.set(extended, arrivalUs);
  }

  /**
   * The feedback RTCP packet for the packets recorded since the last one (lost ones in between
   * reported as not received), or undefined when nothing arrived since.
   */
  take(mediaSsrc: number): Buffer<ArrayBuffer> | undefined {
    if (this.arrivals.size === 0) return undefined;
    const sequences = [...this.arrivals.keys()].sort((a, b) => a - b);
    const first = sequences[0] as number;
    // A gap too long to list (the sender paused its numbering, or a burst lost) is skipped.
    const base = this.next === undefined || first - this.next >= MAX_PACKETS ? first : this.next;
    const firstArrival = this.arrivals.get(first) as number;
    const reference = Math.floor(firstArrival / REFERENCE_US);

    const statuses: Status[] = [];
    const deltas: number[] = [];
    let previous = reference * DELTAS_PER_REFERENCE;
    let last = base - 1;
    const highest = sequences[sequences.length - 1] as number;
    for (let sequence = base; sequence <= highest && sequence - base < MAX_PACKETS; sequence++) {
      const arrival = this.arrivals.get(sequence);
      if (arrival === undefined) {
        statuses.push(NOT_RECEIVED);
        last = sequence;
        continue;
      }
      // Each delta from the previous one as sent (on the 250 µs grid), so rounding never adds up.
      const at = Math.round(arrival / DELTA_US);
      const delta = at - previous;
      if (delta < -0x8000 || delta > 0x7fff) break; // over 8 s apart: the next feedback starts here
      statuses.push(delta >= 0 && delta <= 0xff ? SMALL_DELTA : LARGE_DELTA);
      deltas.push(delta);
      previous = at;
      last = sequence;
    }
    for (let sequence = base; sequence <= last; sequence++) this.arrivals.delete(sequence);
    this.next = last + 1;

    const packet = serialize({
      senderSsrc: this.senderSsrc,
      mediaSsrc,
      base: base & 0xffff,
      reference: reference & 0xffffff,
      feedbackCount: this.feedbackCount,
      statuses,
      deltas,
    });
    this.feedbackCount = (this.feedbackCount + 1) & 0xff;
    return packet;
  }

  /** The 16-bit number as an unbounded one, taking the nearer of its possible wraps. */
  private extend(sequence: number): number {
    if (this.highest === undefined) {
      this.highest = sequence;
      return sequence;
    }
    const forward = (((sequence - this.highest) & 0xffff) ^ 0x8000) - 0x8000;
    const extended = this.highest + forward;
    if (forward > 0) this.highest = extended;
    return extended;
  }
}

interface Feedback {
  senderSsrc: number;
  mediaSsrc: number;
  base: number;
  reference: number;
  feedbackCount: number;
  statuses: Status[];
  /** One per received packet, in 250 µs units: 0..255 small (1 byte), else large (2 bytes, signed). */
  deltas: number[];
}

/** The RTCP packet: run-length chunks only (simple, and every receiver parses them), padded to 32 bits. */
function serialize(feedback: Feedback): Buffer<ArrayBuffer> {
  const chunks: number[] = [];
  let run = 0;
  for (let i = 0; i < feedback.statuses.length; i++) {
    const status = feedback.statuses[i] as Status;
    run++;
    if (feedback.statuses[i + 1] !== status || run === MAX_RUN) {
      chunks.push((status << 13) | run);
      run = 0;
    }
  }
  const deltaBytes = feedback.deltas.reduce((sum, d) => sum + (d >= 0 && d <= 0xff ? 1 : 2), 0);
  const body = 20 + chunks.length * 2 + deltaBytes;
  const padding = (4 - (body % 4)) % 4;
  const buffer = Buffer.alloc(body + padding);
  buffer[0] = 0x80 | (padding > 0 ? 0x20 : 0) | FMT_TRANSPORT_CC;
  buffer[1] = RTPFB;
  buffer.writeUInt16BE(buffer.length / 4 - 1, 2);
  buffer.writeUInt32BE(feedback.senderSsrc >>> 0, 4);
  buffer.writeUInt32BE(feedback.mediaSsrc >>> 0, 8);
  buffer.writeUInt16BE(feedback.base, 12);
  buffer.writeUInt16BE(feedback.statuses.length, 14);
  buffer.writeUIntBE(feedback.reference, 16, 3);
  buffer[19] = feedback.feedbackCount;
  let offset = 20;
  for (const chunk of chunks) offset = buffer.writeUInt16BE(chunk, offset);
  for (const delta of feedback.deltas) {
    offset = delta >= 0 && delta <= 0xff ? buffer.writeUInt8(delta, offset) : buffer.writeInt16BE(delta, offset);
  }
  // RFC 3550 padding: the last byte counts the padding bytes.
  if (padding > 0) buffer[buffer.length - 1] = padding;
  return buffer;
}
