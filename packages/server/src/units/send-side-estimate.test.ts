import { describe, expect, it } from 'vitest';
import type { PacketResult } from './feedback-results.js';
import { SendSideEstimate } from './send-side-estimate.js';

const PACKET = 1200;

/**
 * A viewer's link: a queue drained at `rateBps` with `delayMs` of propagation. The unit sends
 * `sendBps` in 1200-byte packets; every 50 ms the browser's feedback reports what arrived by then.
 */
class Link {
  private sequence = 0;
  private lastArrival = 0;
  private pending: PacketResult[] = [];
  now = 0;

  constructor(
    readonly estimate: SendSideEstimate,
    public rateBps: number,
    readonly delayMs = 20,
  ) {}

  /** Runs `ms` of sending at `sendBps`, with feedback every 50 ms. Returns the estimates after each feedback. */
  run(ms: number, sendBps: number): (number | undefined)[] {
    const every = (PACKET * 8 * 1000) / sendBps;
    const estimates: (number | undefined)[] = [];
    const end = this.now + ms;
    let nextFeedback = this.now + 50;
    for (; this.now < end; this.now += every) {
      const sequence = this.sequence++ & 0xffff;
      this.estimate.sent(sequence, PACKET, this.now);
      const leaves = Math.max(this.now, this.lastArrival) + (PACKET * 8 * 1000) / this.rateBps;
      this.lastArrival = leaves;
      this.pending.push({ sequence, arrivalUs: (leaves + this.delayMs) * 1000 });
      if (this.now >= nextFeedback) {
        // What has arrived by now is reported; the rest waits for the next feedback.
        const arrived = this.pending.filter((p) => (p.arrivalUs ?? 0) <= (this.now - this.delayMs) * 1000);
        this.pending = this.pending.slice(arrived.length);
        this.estimate.feedback(arrived, this.now);
        estimates.push(this.estimate.estimate);
        nextFeedback += 50;
      }
    }
    return estimates;
  }
}

describe('SendSideEstimate', () => {
  it('says nothing before half a second of feedback, then starts at what got through (at least 100 kbit/s)', () => {
    const estimate = new SendSideEstimate();
    const link = new Link(estimate, 10_000_000);
    const first = link.run(400, 1_000_000);
    expect(first.every((e) => e === undefined)).toBe(true);
    link.run(300, 1_000_000);
    expect(estimate.estimate).toBeGreaterThan(900_000);
    expect(estimate.estimate).toBeLessThan(1_200_000);
    expect(estimate.acked).toBeGreaterThan(900_000);

    const slow = new SendSideEstimate();
    new Link(slow, 10_000_000).run(1500, 50_000);
    // 100 kbit/s at the start, grown by 8% a second since.
    expect(slow.estimate).toBeGreaterThanOrEqual(100_000);
    expect(slow.estimate).toBeLessThan(110_000);
  });

  it('grows about 8% a second on a link that keeps up, never past 1.5 times what gets through', () => {
    const estimate = new SendSideEstimate();
    const link = new Link(estimate, 10_000_000);
    link.run(1000, 600_000);
    const start = estimate.estimate ?? 0;
    link.run(2000, 600_000);
    const grown = estimate.estimate ?? 0;
    expect(grown / start).toBeGreaterThan(1.1);
    expect(grown / start).toBeLessThan(1.25);
    link.run(10_000, 600_000);
    expect(estimate.estimate).toBeLessThanOrEqual(1.5 * 600_000 + 10_000 + 1);
    expect(estimate.estimate).toBeGreaterThan(800_000);
    expect(estimate.usage).toBe('normal');
  });

  it('a link that queues (sent 2 Mbit/s into 1.5) is overuse, and the estimate falls to 0.85 of what got through', () => {
    const estimate = new SendSideEstimate();
    const link = new Link(estimate, 1_500_000);
    link.run(2000, 1_000_000);
    expect(estimate.usage).toBe('normal');
    const estimates = link.run(1000, 2_000_000);
    expect(estimates.some((e) => (e ?? 0) < 1_400_000)).toBe(true);
    expect(estimate.estimate).toBeGreaterThan(1_500_000 * 0.85 * 0.9);
    expect(estimate.estimate).toBeLessThan(1_500_000);
  });

  it('reads how fast the link delivers against how fast it is sent: about 1 when it keeps up, the share when it queues', () => {
    const estimate = new SendSideEstimate();
    const link = new Link(estimate, 1_500_000);
    link.run(1000, 1_000_000);
    expect(estimate.deliveryRatio).toBeGreaterThan(0.95);
    expect(estimate.deliveryRatio).toBeLessThan(1.05);
    link.run(600, 3_000_000);
    expect(estimate.deliveryRatio).toBeGreaterThan(0.45);
    expect(estimate.deliveryRatio).toBeLessThan(0.55);
  });

  it('lost packets and ones it never sent do not count as delivered', () => {
    const estimate = new SendSideEstimate();
    estimate.sent(1, 1000, 0);
    estimate.sent(2, 1000, 10);
    estimate.feedback(
      [
        { sequence: 1, arrivalUs: 20_000 },
        { sequence: 2, arrivalUs: undefined },
        { sequence: 3, arrivalUs: 40_000 },
      ],
      50,
    );
    // One packet of 1000 bytes over the shortest span counted (100 ms): 80 kbit/s.
    expect(estimate.acked).toBe(80_000);
  });
});
