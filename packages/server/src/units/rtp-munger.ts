/**
 * One viewer's output numbering for video forwarded from one of several sources (a presenter's
 * simulcast layers, each its own SSRC, or a new presenter): the viewer sees ONE stream whose
 * sequence numbers and timestamps go on without a jump when the source changes.
 *
 * - `switchTo` starts a new source at its first packet (a keyframe): that packet gets the output
 *   sequence number after the highest one given out so far, and the last output timestamp moved on
 *   by the wall time since that packet went out (at least 1 tick). The first source ever keeps its
 *   own numbers (offsets 0).
 * - `map` gives a packet of the current source its output numbers, or undefined to drop it: another
 *   SSRC, a packet from before the switch point, too old (more than `MAX_REORDER` behind the newest),
 *   or a padding-only packet. A padding-only packet that is the newest so far is dropped and its
 *   output sequence number is given to the next packet, so the viewer sees no gap (it would NACK a
 *   packet that never comes). Gaps left by packets not yet arrived keep their numbers, so a late or
 *   retransmitted packet takes the number that was kept for it, and a duplicate of a forwarded packet
 *   maps to the same output again (a retransmission is harmless).
 * - Reordering around a dropped padding packet: the output number of any packet depends only on its
 *   own sequence number and the drops and insertions before it, so a media packet that arrives after
 *   a newer padding packet was dropped still gets the number kept for it (no collision, no gap). A
 *   padding-only packet that arrives late (not the newest) has its number kept already: it is
 *   forwarded as it is (the viewer's decoder ignores padding) rather than leaving a hole the viewer
 *   would NACK. The caller sends whatever `map` answers numbers for, padding or not.
 * - `padding` numbers a padding packet the unit sends itself (to probe the viewer's link): the next
 *   output sequence number, the timestamp of the last packet; later packets move on by one.
 *
 * The per-packet answers of `map` and `padding` are written into one object owned by the munger and
 * returned: it is valid until the next call on this munger (copy the two numbers out at once). The
 * few drops and insertions a late packet needs are kept in a fixed ring, so a packet costs no
 * allocation.
 */

/** Packets older than this many sequence numbers behind the newest are dropped, not renumbered. */
export const MAX_REORDER = 1024;
/** Drops and insertions remembered for late packets; a late packet older than the forgotten ones is dropped. */
const EDITS = 64;

export interface RtpNumbers {
  sequenceNumber: number;
  timestamp: number;
}

export class RtpMunger {
  private readonly out: RtpNumbers = { sequenceNumber: 0, timestamp: 0 };

  /** The current source, once `switchTo` was called. */
  private ssrc: number | undefined;
  /** Its first packet's sequence number, extended: packets before it belong to the previous source. */
  private start = 0;
  /** The newest packet's sequence number of the current source, extended past 16 bits. */
  private highest = 0;
  /** Output sequence = extended input + `seqOffset` for a packet newer than every edit (mod 2^16). */
  private seqOffset = 0;
  /** Output timestamp = input + `tsOffset` (mod 2^32), for the whole source. */
  private tsOffset = 0;

  /** Whether any packet (or unit padding) went out: the first source keeps its own numbers. */
  private started = false;
  /** The timestamp of the newest packet out, and when it went out (ms). */
  private lastTimestamp = 0;
  private lastAt = 0;

  /**
   * Edits of the numbering since the switch, oldest first, in a ring: packets after `editTo[i]`
   * (extended input) move by `editDelta[i]`; those from `editFrom[i]` to `editTo[i]` were dropped
   * padding (an empty range for the unit's own padding, inserted after `editTo[i]`).
   */
  private readonly editFrom = new Float64Array(EDITS);
  private readonly editTo = new Float64Array(EDITS);
  private readonly editDelta = new Float64Array(EDITS);
  private editHead = 0;
  private editCount = 0;
  /** The highest `editTo` pushed out of the ring: packets at or before it can no longer be numbered. */
  private forgotten = Number.NEGATIVE_INFINITY;

  /** @param clockRate the RTP clock of the codec (Hz), to move the timestamp on by wall time at a switch. */
  constructor(private readonly clockRate: number) {}

  /** The SSRC packets are taken from now, if any. */
  get source(): number | undefined {
    return this.ssrc;
  }

  /**
   * Takes packets from `ssrc` from this one (its first, a keyframe) on; call `map` for it next. Also
   * for the same SSRC after forwarding stopped for a while (a paused viewer resumed): the packets not
   * forwarded meanwhile leave no gap.
   */
  switchTo(ssrc: number, sequenceNumber: number, timestamp: number, nowMs: number): void {
    if (this.started) {
      const next = this.highest + this.seqOffset + 1;
      const ticks = Math.max(1, Math.round(((nowMs - this.lastAt) * this.clockRate) / 1000));
      this.seqOffset = next - sequenceNumber;
      this.tsOffset = (this.lastTimestamp + ticks - timestamp) >>> 0;
    } else {
      this.seqOffset = 0;
      this.tsOffset = 0;
    }
    this.ssrc = ssrc;
    this.start = sequenceNumber;
    this.highest = sequenceNumber - 1;
    this.editHead = 0;
    this.editCount = 0;
    this.forgotten = Number.NEGATIVE_INFINITY;
  }

  /**
   * The output numbers of a packet of the current source, or undefined to drop it (see the class
   * comment). The answer is the munger's own object, valid until its next call.
   */
  map(
    ssrc: number,
    sequenceNumber: number,
    timestamp: number,
    paddingOnly: boolean,
    nowMs: number,
  ): RtpNumbers | undefined {
    if (ssrc !== this.ssrc) return undefined;
    const extended = this.extend(sequenceNumber);
    if (extended > this.highest) {
      const previous = this.highest;
      this.highest = extended;
      if (paddingOnly) {
        this.dropNewest(extended, previous);
        return undefined;
      }
      this.started = true;
      this.lastTimestamp = (timestamp + this.tsOffset) >>> 0;
      this.lastAt = nowMs;
      return this.answer(extended + this.seqOffset, this.lastTimestamp);
    }
    if (extended < this.start || extended <= this.forgotten || extended < this.highest - MAX_REORDER) return undefined;
    // A late packet: undo the edits made after it.
    let offset = this.seqOffset;
    for (let i = 0; i < this.editCount; i++) {
      const slot = (this.editHead + i) % EDITS;
      const to = this.editTo[slot] as number;
      if (extended > to) continue;
      if (extended >= (this.editFrom[slot] as number)) return undefined; // a dropped padding packet, again
      offset -= this.editDelta[slot] as number;
    }
    return this.answer(extended + offset, (timestamp + this.tsOffset) >>> 0);
  }

  /**
   * Numbers for a padding packet the unit sends itself on this viewer's stream: the next output
   * sequence number and the last packet's timestamp. The answer is the munger's own object.
   */
  padding(nowMs: number): RtpNumbers {
    if (!this.started) {
      // Nothing went out yet: the stream starts here, at 0; the first source numbers on from it.
      this.started = true;
      this.seqOffset = -this.highest - 1;
      this.lastTimestamp = 0;
      this.lastAt = nowMs;
    }
    const sequence = this.highest + this.seqOffset + 1;
    const last = this.newestEdit();
    if (last !== undefined && this.editTo[last] === this.highest && (this.editDelta[last] as number) > 0) {
      this.editDelta[last] = (this.editDelta[last] as number) + 1;
    } else {
      this.push(this.highest + 1, this.highest, 1);
    }
    this.seqOffset++;
    return this.answer(sequence, this.lastTimestamp);
  }

  /** Drops the newest packet (padding only) and gives its output number to the next one. */
  private dropNewest(extended: number, previous: number): void {
    const last = this.newestEdit();
    if (last !== undefined && this.editTo[last] === previous && (this.editDelta[last] as number) < 0) {
      // A run of padding with nothing between: one edit.
      if (extended === previous + 1) {
        this.editTo[last] = extended;
        this.editDelta[last] = (this.editDelta[last] as number) - 1;
        this.seqOffset--;
        return;
      }
    }
    this.push(extended, extended, -1);
    this.seqOffset--;
  }

  private newestEdit(): number | undefined {
    return this.editCount === 0 ? undefined : (this.editHead + this.editCount - 1) % EDITS;
  }

  private push(from: number, to: number, delta: number): void {
    if (this.editCount === EDITS) {
      this.forgotten = this.editTo[this.editHead] as number;
      this.editHead = (this.editHead + 1) % EDITS;
      this.editCount--;
    }
    const slot = (this.editHead + this.editCount) % EDITS;
    this.editFrom[slot] = from;
    this.editTo[slot] = to;
    this.editDelta[slot] = delta;
    this.editCount++;
  }

  /** `sequenceNumber` extended past 16 bits, the nearest to the newest seen. */
  private extend(sequenceNumber: number): number {
    const delta = ((sequenceNumber - this.highest + 0x8000) & 0xffff) - 0x8000;
    return this.highest + delta;
  }

  private answer(sequence: number, timestamp: number): RtpNumbers {
    this.out.sequenceNumber = sequence & 0xffff;
    this.out.timestamp = timestamp;
    return this.out;
  }
}
