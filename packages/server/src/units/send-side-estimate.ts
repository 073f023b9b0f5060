/**
 * A viewer's downlink as the unit reckons it from the viewer's transport-wide feedback (the browser
 * says when each packet arrived): what the link delivered over the last ACKED_WINDOW_MS, whether it
 * is queueing (DelayTrend), and a rate that follows both (GoogCC's rate control in short: down to
 * DECREASE times what got through when the link queues, up INCREASE a second while it does not,
 * never far above what got through).
 *
 * A browser sends transport-wide feedback instead of REMB once the unit numbers its packets, so
 * this takes REMB's place for such a viewer; unlike REMB it also sees a probe fill a queue within
 * a few packet groups.
 */
import { DelayTrend, type LinkUsage } from './delay-trend.js';
import type { PacketResult } from './feedback-results.js';

/**
 * Packets remembered (by transport sequence number, modulo this; 32 kB a viewer): feedback comes
 * every 50-250 ms, and 2048 packets are 0.75 s even at the unit's fastest (a probe's padding,
 * about 6 Mbit/s of 280-byte packets).
 */
const HISTORY = 2048;
/** What the link delivered is reckoned over this much of arrival time (ms). */
const ACKED_WINDOW_MS = 500;
/** Arrivals are summed in slots this long (ms), so the window holds at most ACKED_WINDOW_MS / SLOT_MS entries. */
const SLOT_MS = 25;
/**
 * The first rate is what got through over the first half second, but at least this (bits/s): the
 * lowest layer's rate, about. Not more: a start above what the link carries moves a viewer up a
 * layer the link then cannot take (probes find the rest).
 */
const START = 100_000;
const DECREASE = 0.85;
/** Growth a second while the link does not queue. */
const INCREASE = 1.08;
/** The rate stays under this many times what got through (plus a little): growth past it is a guess. */
const ACKED_HEADROOM = 1.5;
/** A delivery ratio under this, with the delay rising, is a queue (see deliveryRatio). */
const QUEUED = 0.95;
/** Decreases at least this far apart (ms): one queue is one decrease, whatever the feedbacks in it. */
const DECREASE_GAP_MS = 300;

/** Arrivals in one SLOT_MS of arrival time: their bytes, and the first and last send and arrival times among them. */
interface Slot {
  at: number;
  bytes: number;
  firstSend: number;
  lastSend: number;
  firstArrival: number;
  lastArrival: number;
}

export class SendSideEstimate {
  private readonly sentAt = new Float64Array(HISTORY);
  private readonly sizes = new Uint32Array(HISTORY);
  private readonly sequences = new Int32Array(HISTORY).fill(-1);
  private readonly trend = new DelayTrend();
  private readonly slots: Slot[] = [];
  private rate: number | undefined;
  private holding = false;
  private updatedAt: number | undefined;
  private decreasedAt = Number.NEGATIVE_INFINITY;
  private firstFeedbackAt: number | undefined;

  /** A packet went to the viewer numbered `sequence` (transport-wide, 16 bits), `bytes` long. */
  sent(sequence: number, bytes: number, nowMs: number): void {
    const slot = sequence % HISTORY;
    this.sequences[slot] = sequence;
    this.sentAt[slot] = nowMs;
    this.sizes[slot] = bytes;
  }

  /** The browser's feedback on what it got. */
  feedback(results: readonly PacketResult[], nowMs: number): void {
    for (const { sequence, arrivalUs } of results) {
      if (arrivalUs === undefined) continue;
      const slot = sequence % HISTORY;
      if (this.sequences[slot] !== sequence) continue;
      const arrivalMs = arrivalUs / 1000;
      this.trend.packet(this.sentAt[slot] ?? 0, arrivalMs);
      this.arrived(arrivalMs, this.sentAt[slot] ?? 0, this.sizes[slot] ?? 0);
    }
    this.firstFeedbackAt ??= nowMs;
    this.control(nowMs);
  }

  get usage(): LinkUsage {
    return this.trend.usage;
  }

  /** What the link delivered over the last ACKED_WINDOW_MS of arrivals (bits/s), once it is known. */
  get acked(): number | undefined {
    const first = this.slots[0];
    const last = this.slots.at(-1);
    if (!first || !last) return undefined;
    let bytes = 0;
    for (const slot of this.slots) bytes += slot.bytes;
    const span = Math.max(last.at + SLOT_MS - first.at, 4 * SLOT_MS);
    return (bytes * 8000) / span;
  }

  /**
   * How fast the link delivered what it was sent over the last ACKED_WINDOW_MS of arrivals: the
   * time those packets took to send over the time they took to arrive. About 1 on a link that keeps
   * up, whatever its jitter (a busy receiver stamps arrivals late by a few ms, not by a tenth of the
   * window); under 1 on one that queues (a probe past its rate: sent at twice, about 0.5).
   */
  get deliveryRatio(): number | undefined {
    let firstSend = Number.POSITIVE_INFINITY;
    let lastSend = Number.NEGATIVE_INFINITY;
    let firstArrival = Number.POSITIVE_INFINITY;
    let lastArrival = Number.NEGATIVE_INFINITY;
    for (const slot of this.slots) {
      firstSend = Math.min(firstSend, slot.firstSend);
      lastSend = Math.max(lastSend, slot.lastSend);
      firstArrival = Math.min(firstArrival, slot.firstArrival);
      lastArrival = Math.max(lastArrival, slot.lastArrival);
    }
    const arrivalSpan = lastArrival - firstArrival;
    // Too short a span to tell (fewer than 100 ms of arrivals).
    if (!(arrivalSpan >= 4 * SLOT_MS)) return undefined;
    return (lastSend - firstSend) / arrivalSpan;
  }

  /** The rate the link carries (bits/s), or undefined before half a second of feedback. */
  get estimate(): number | undefined {
    return this.rate;
  }

  private arrived(arrivalMs: number, sendMs: number, bytes: number): void {
    const at = arrivalMs - (arrivalMs % SLOT_MS);
    let last = this.slots.at(-1);
    if (!last || at > last.at) {
      last = { at, bytes: 0, firstSend: sendMs, lastSend: sendMs, firstArrival: arrivalMs, lastArrival: arrivalMs };
      this.slots.push(last);
    }
    // Late (reordered) into an older slot: counted in the newest one, which is close enough.
    last.bytes += bytes;
    last.firstSend = Math.min(last.firstSend, sendMs);
    last.lastSend = Math.max(last.lastSend, sendMs);
    last.firstArrival = Math.min(last.firstArrival, arrivalMs);
    last.lastArrival = Math.max(last.lastArrival, arrivalMs);
    const newest = this.slots.at(-1)?.at ?? at;
    while ((this.slots[0]?.at ?? newest) <= newest - ACKED_WINDOW_MS) this.slots.shift();
  }

  private control(nowMs: number): void {
    const acked = this.acked;
    if (this.rate === undefined) {
      if (acked === undefined || nowMs - (this.firstFeedbackAt ?? nowMs) < ACKED_WINDOW_MS) return;
      this.rate = Math.max(START, acked);
      this.updatedAt = nowMs;
      return;
    }
    const elapsed = Math.min(nowMs - (this.updatedAt ?? nowMs), 1000);
    this.updatedAt = nowMs;
    const usage = this.trend.usage;
    if (usage === 'overusing') {
      // Only a link that also delivers slower than it is sent: a busy receiver's late stamps read
      // as a rising delay too, and must not bring the rate down.
      const ratio = this.deliveryRatio;
      if (acked !== undefined && ratio !== undefined && ratio < QUEUED && nowMs - this.decreasedAt >= DECREASE_GAP_MS) {
        this.rate = DECREASE * acked;
        this.decreasedAt = nowMs;
      }
      this.holding = true;
      return;
    }
    if (usage === 'underusing') {
      // The queue drains: wait for it before growing again.
      this.holding = true;
      return;
    }
    if (this.holding) {
      this.holding = false;
      return;
    }
    let rate = this.rate * INCREASE ** (elapsed / 1000);
    if (acked !== undefined) rate = Math.min(rate, Math.max(this.rate, ACKED_HEADROOM * acked + 10_000));
    this.rate = rate;
  }
}
