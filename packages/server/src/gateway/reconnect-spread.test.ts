import { describe, expect, it } from 'vitest';
import { reconnectDelayMs, reconnectDelays, reconnectWindowMs } from './reconnect-spread.js';

const spread = { ratePerSecond: 500, capMs: 30_000 };

describe('reconnect spread', () => {
  it('is at least 1 s, pages / rate above that, and capped', () => {
    expect(reconnectWindowMs(0, spread)).toBe(1000);
    expect(reconnectWindowMs(1, spread)).toBe(1000);
    expect(reconnectWindowMs(500, spread)).toBe(1000);
    expect(reconnectWindowMs(2500, spread)).toBe(5000);
    expect(reconnectWindowMs(1_000_000, spread)).toBe(30_000);
    expect(reconnectWindowMs(100, { ratePerSecond: 10, capMs: 30_000 })).toBe(10_000);
    expect(reconnectWindowMs(100, { ratePerSecond: 10, capMs: 500 })).toBe(500);
  });

  it('falls back to the default rate when the rate is not positive', () => {
    expect(reconnectWindowMs(5000, { ratePerSecond: 0, capMs: 30_000 })).toBe(10_000);
  });

  it('draws a delay uniform over [0, window) from the random source', () => {
    expect(reconnectDelayMs(5000, () => 0)).toBe(0);
    expect(reconnectDelayMs(5000, () => 0.5)).toBe(2500);
    expect(reconnectDelayMs(5000, () => 0.99999)).toBe(4999);
    expect(reconnectDelayMs(5000, () => 1)).toBe(4999);
    expect(reconnectDelayMs(5000, () => -3)).toBe(0);
    expect(reconnectDelayMs(5000, () => Number.NaN)).toBe(0);
    expect(reconnectDelayMs(0, () => 0.5)).toBe(0);
  });

  it('gives each page of a batch its own draw over the batch window', () => {
    const draws = [0, 0.25, 0.5, 0.75];
    let i = 0;
    const next = reconnectDelays(2000, spread, () => draws[i++ % draws.length] ?? 0);
    expect([next(), next(), next(), next()]).toEqual([0, 1000, 2000, 3000]);
  });
});
