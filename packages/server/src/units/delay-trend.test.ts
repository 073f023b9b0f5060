import { describe, expect, it } from 'vitest';
import { DelayTrend, type LinkUsage } from './delay-trend.js';

/** Sends a packet every `everyMs` for `count` packets; `arrival` says when each arrived. Returns the usages seen. */
function run(
  trend: DelayTrend,
  count: number,
  everyMs: number,
  arrival: (sendMs: number, i: number) => number,
  from = 0,
): LinkUsage[] {
  const seen: LinkUsage[] = [];
  for (let i = 0; i < count; i++) {
    const sendMs = from + i * everyMs;
    trend.packet(sendMs, arrival(sendMs, i));
    seen.push(trend.usage);
  }
  return seen;
}

/** A deterministic jitter in [-amplitude, amplitude] ms. */
function jitter(i: number, amplitude: number): number {
  return (((i * 7919) % 101) / 50 - 1) * amplitude;
}

describe('DelayTrend', () => {
  it('a link that keeps up (constant delay, some jitter) is never read as queueing', () => {
    const trend = new DelayTrend();
    const seen = run(trend, 1000, 10, (send, i) => 1_000_000 + send + 30 + jitter(i, 2));
    expect(seen).not.toContain('overusing');
    expect(trend.usage).toBe('normal');
  });

  it('a queue that grows (packets leave the link 20% slower than they are sent) is overuse within half a second', () => {
    const trend = new DelayTrend();
    run(trend, 200, 10, (send) => 5000 + send + 30);
    const seen = run(trend, 50, 10, (_send, i) => 5000 + 2000 + 30 + i * 12, 2000);
    const first = seen.indexOf('overusing');
    expect(first).toBeGreaterThanOrEqual(0);
    expect(first).toBeLessThan(50);
  });

  it('a queue draining (packets arrive closer than they were sent) turns to underuse, then normal once steady', () => {
    const trend = new DelayTrend();
    run(trend, 200, 10, (send) => send + 30);
    // A queue builds for 0.5 s (each packet 12 ms after the last, sent 10 ms apart): 100 ms deep.
    expect(run(trend, 50, 10, (_send, i) => 2030 + i * 12, 2000)).toContain('overusing');
    // Then drains: each packet 6 ms after the last, until the delay is back to 30 ms.
    const draining = run(trend, 25, 10, (_send, i) => 2630 + i * 6, 2500);
    // The trend is fitted over 20 groups: it reads the queue for a few more before it turns.
    const turned = draining.indexOf('underusing');
    expect(turned).toBeGreaterThan(0);
    expect(draining.slice(turned)).not.toContain('overusing');
    const steady = run(trend, 300, 10, (send) => send + 30, 2750);
    expect(steady.at(-1)).toBe('normal');
  });

  it('a jittery link raises the threshold, so jitter alone is not overuse, while a real queue still is', () => {
    const trend = new DelayTrend();
    const jittery = run(trend, 2000, 10, (send, i) => send + 40 + jitter(i, 8));
    expect(jittery.slice(500)).not.toContain('overusing');
    const queue = run(trend, 150, 10, (_send, i) => 20_000 + 40 + i * 15, 20_000);
    expect(queue).toContain('overusing');
  });

  it('packets sent within 5 ms of each other count as one group (a burst is not a queue)', () => {
    const trend = new DelayTrend();
    // Frames of 5 packets each sent at once and spread 2 ms apart on arrival by the link, every 33 ms.
    for (let frame = 0; frame < 300; frame++) {
      for (let p = 0; p < 5; p++) trend.packet(frame * 33, frame * 33 + 20 + p * 2);
      expect(trend.usage).not.toBe('overusing');
    }
  });

  it('a jump in delay of more than 3 s starts over (a new path, not a queue)', () => {
    const trend = new DelayTrend();
    run(trend, 100, 10, (send) => send + 30);
    const seen = run(trend, 100, 10, (send) => send + 5030, 1000);
    expect(seen).not.toContain('overusing');
  });
});
