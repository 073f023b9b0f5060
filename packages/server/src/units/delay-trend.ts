/**
 * Whether a viewer's link is queueing: the trend of one-way delay over the last packet groups, read
 * from when the unit sent each packet and when the browser says it arrived (transport-wide
 * feedback). A link near its limit queues before it drops, so its delay climbs first: this sees it
 * while a probe's padding is still filling the queue, before the viewer loses a frame.
 *
 * The method is GoogCC's delay-based detector (draft-ietf-rmcat-gcc-02, the trendline form
 * Chromium uses): packets sent within GROUP_MS form a group; each group's delay against the last
 * is accumulated and smoothed, and the slope of its line over the last WINDOW groups, scaled, is
 * held against a threshold that adapts to how noisy the link is.
 */

/** Packets sent this close together (ms) form one group: a frame's packets, a probe's burst. */
const GROUP_MS = 5;
/** Groups the slope is fitted over. */
const WINDOW = 20;
const SMOOTHING = 0.9;
/** The slope is scaled by the groups seen (at most MAX_DELTAS) times this before the threshold. */
const GAIN = 4;
const MAX_DELTAS = 60;
/** The adaptive threshold: its start, bounds, and how fast it follows the trend down and up. */
const THRESHOLD = { start: 12.5, min: 6, max: 600, down: 0.039, up: 0.0087 };
/** How long (ms of sending) the trend must stay over the threshold before it is overuse. */
const OVERUSE_MS = 10;
/** A group whose delay jumped by more than this (ms) restarts the trend: the link changed, it is not a queue. */
const RESET_MS = 3000;

export type LinkUsage = 'normal' | 'overusing' | 'underusing';

interface Group {
  firstSendMs: number;
  lastSendMs: number;
  lastArrivalMs: number;
}

export class DelayTrend {
  private group: Group | undefined;
  private previous: Group | undefined;
  private deltas = 0;
  private accumulated = 0;
  private smoothed = 0;
  private firstArrivalMs: number | undefined;
  private readonly points: { x: number; y: number }[] = [];
  private trend = 0;
  private previousTrend = 0;
  private threshold = THRESHOLD.start;
  private thresholdAt: number | undefined;
  private overuseMs = -1;
  private overuseCount = 0;
  private state: LinkUsage = 'normal';

  get usage(): LinkUsage {
    return this.state;
  }

  /** A packet the browser got: when the unit sent it and when it arrived (ms, each on its own clock). */
  packet(sendMs: number, arrivalMs: number): void {
    const group = this.group;
    if (!group) {
      this.group = { firstSendMs: sendMs, lastSendMs: sendMs, lastArrivalMs: arrivalMs };
      return;
    }
    // Sent before the group began: reordered, it says nothing about the queue now.
    if (sendMs < group.firstSendMs) return;
    if (sendMs - group.firstSendMs <= GROUP_MS) {
      group.lastSendMs = Math.max(group.lastSendMs, sendMs);
      group.lastArrivalMs = Math.max(group.lastArrivalMs, arrivalMs);
      return;
    }
    const previous = this.previous;
    if (previous) {
      const sendDelta = group.lastSendMs - previous.lastSendMs;
      const arrivalDelta = group.lastArrivalMs - previous.lastArrivalMs;
      if (arrivalDelta >= 0) this.update(arrivalDelta - sendDelta, sendDelta, group.lastArrivalMs);
    }
    this.previous = group;
    this.group = { firstSendMs: sendMs, lastSendMs: sendMs, lastArrivalMs: arrivalMs };
  }

  private update(delayMs: number, sendDelta: number, arrivalMs: number): void {
    if (Math.abs(delayMs) > RESET_MS) {
      this.reset();
      return;
    }
    this.deltas = Math.min(this.deltas + 1, 1000);
    this.accumulated += delayMs;
    this.smoothed = SMOOTHING * this.smoothed + (1 - SMOOTHING) * this.accumulated;
    this.firstArrivalMs ??= arrivalMs;
    this.points.push({ x: arrivalMs - this.firstArrivalMs, y: this.smoothed });
    if (this.points.length > WINDOW) this.points.shift();
    if (this.points.length === WINDOW) this.trend = slope(this.points) ?? this.trend;
    this.detect(sendDelta, arrivalMs);
  }

  private detect(sendDelta: number, arrivalMs: number): void {
    if (this.deltas < 2) {
      this.state = 'normal';
      return;
    }
    const modified = Math.min(this.deltas, MAX_DELTAS) * this.trend * GAIN;
    if (modified > this.threshold) {
      this.overuseMs = this.overuseMs < 0 ? sendDelta / 2 : this.overuseMs + sendDelta;
      this.overuseCount++;
      if (this.overuseMs > OVERUSE_MS && this.overuseCount > 1 && this.trend >= this.previousTrend) {
        this.overuseMs = 0;
        this.overuseCount = 0;
        this.state = 'overusing';
      }
    } else {
      this.overuseMs = -1;
      this.overuseCount = 0;
      this.state = modified < -this.threshold ? 'underusing' : 'normal';
    }
    this.previousTrend = this.trend;
    this.adapt(modified, arrivalMs);
  }

  /** The threshold follows the trend's size (slowly up, faster down), so a jittery link is not read as queueing. */
  private adapt(modified: number, arrivalMs: number): void {
    const last = this.thresholdAt ?? arrivalMs;
    this.thresholdAt = arrivalMs;
    const size = Math.abs(modified);
    // A spike far over the threshold is a queue, not noise: it must not raise the bar.
    if (size > this.threshold + 15) return;
    const k = size < this.threshold ? THRESHOLD.down : THRESHOLD.up;
    const elapsed = Math.min(arrivalMs - last, 100);
    this.threshold += k * (size - this.threshold) * elapsed;
    this.threshold = Math.min(THRESHOLD.max, Math.max(THRESHOLD.min, this.threshold));
  }

  private reset(): void {
    this.deltas = 0;
    this.accumulated = 0;
    this.smoothed = 0;
    this.firstArrivalMs = undefined;
    this.points.length = 0;
    this.trend = 0;
    this.previousTrend = 0;
    this.state = 'normal';
  }
}

/** The least-squares slope of y over x, or undefined when all x are the same. */
function slope(points: readonly { x: number; y: number }[]): number | undefined {
  let sumX = 0;
  let sumY = 0;
  for (const point of points) {
    sumX += point.x;
    sumY += point.y;
  }
  const meanX = sumX / points.length;
  const meanY = sumY / points.length;
  let numerator = 0;
  let denominator = 0;
  for (const point of points) {
    numerator += (point.x - meanX) * (point.y - meanY);
    denominator += (point.x - meanX) ** 2;
  }
  return denominator === 0 ? undefined : numerator / denominator;
}
