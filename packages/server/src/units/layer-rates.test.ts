import { describe, expect, it } from 'vitest';
import { LayerRates } from './layer-rates.js';

/** Sends `bytes` every `everyMs` on `layer` from `fromMs` up to (not including) `toMs`. */
function flow(rates: LayerRates, layer: number, bytes: number, everyMs: number, fromMs: number, toMs: number): void {
  for (let t = fromMs; t < toMs; t += everyMs) rates.add(layer, bytes, t);
}

/** Within 2% of `expected`. */
function near(actual: number, expected: number): void {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(expected * 0.02);
}

describe('LayerRates', () => {
  it('reads a steady flow at its rate in bits/s at any moment within a bucket', () => {
    const rates = new LayerRates(3);
    // 1250 bytes every 10 ms: 1 Mbit/s.
    flow(rates, 1, 1250, 10, 0, 3000);
    for (const now of [2990, 2995, 3000]) near(rates.rate(1, now), 1_000_000);
    flow(rates, 1, 1250, 10, 3000, 3050);
    near(rates.rate(1, 3045), 1_000_000);
  });

  it('keeps each layer apart', () => {
    const rates = new LayerRates(3);
    flow(rates, 0, 250, 10, 0, 2000); // 200 kbit/s
    flow(rates, 2, 2500, 10, 0, 2000); // 2 Mbit/s
    near(rates.rate(0, 1995), 200_000);
    expect(rates.rate(1, 1995)).toBe(0);
    near(rates.rate(2, 1995), 2_000_000);
  });

  it('slides: a layer that stopped reads lower as its bytes leave the window, then 0', () => {
    const rates = new LayerRates(1);
    flow(rates, 0, 1250, 10, 0, 2000);
    near(rates.rate(0, 2000), 1_000_000);
    // Half a window after the last packet, about half the bytes are still in it.
    const half = rates.rate(0, 2500);
    expect(half).toBeGreaterThan(400_000);
    expect(half).toBeLessThan(600_000);
    expect(rates.rate(0, 3100)).toBe(0);
  });

  it('reads a rate change within one window', () => {
    const rates = new LayerRates(1);
    flow(rates, 0, 1250, 10, 0, 2000); // 1 Mbit/s
    flow(rates, 0, 3750, 10, 2000, 3000); // 3 Mbit/s
    near(rates.rate(0, 3000), 3_000_000);
  });

  it('counts a layer as flowing for a window after its last packet', () => {
    const rates = new LayerRates(2);
    expect(rates.flowing(0, 0)).toBe(false);
    rates.add(0, 100, 5000);
    expect(rates.flowing(0, 5000)).toBe(true);
    expect(rates.flowing(0, 6000)).toBe(true);
    expect(rates.flowing(0, 6001)).toBe(false);
    expect(rates.flowing(1, 5000)).toBe(false);
  });

  it('starts clean after a long silence (the ring is emptied, not grown)', () => {
    const rates = new LayerRates(1);
    flow(rates, 0, 12_500, 10, 0, 1000); // 10 Mbit/s
    const later = 3_600_000;
    flow(rates, 0, 125, 10, later, later + 2000); // 100 kbit/s
    near(rates.rate(0, later + 2000), 100_000);
  });

  it('counts a packet stamped a little earlier than the last one, and ignores one older than the window', () => {
    const rates = new LayerRates(1);
    rates.add(0, 1000, 10_000);
    rates.add(0, 1000, 9_950);
    rates.add(0, 1000, 8_000);
    // 2000 bytes over the 900 ms of full buckets in the window and the 0 ms into the current one.
    expect(rates.rate(0, 10_000)).toBeCloseTo((2000 * 8 * 1000) / 900, 6);
  });

  it('takes a window and bucket count', () => {
    const rates = new LayerRates(1, { windowMs: 2000, buckets: 4 });
    rates.add(0, 1000, 100);
    expect(rates.flowing(0, 2100)).toBe(true);
    expect(rates.flowing(0, 2101)).toBe(false);
    // Bucket 500 ms: at 1000 the window holds buckets 0..2 (0 to 1500), 1500 ms of it elapsed.
    expect(rates.rate(0, 1000)).toBeCloseTo((1000 * 8 * 1000) / 1500, 6);
  });

  it('refuses a layer it does not have and a bad setup', () => {
    const rates = new LayerRates(2);
    expect(() => rates.add(2, 1, 0)).toThrow(RangeError);
    expect(() => rates.rate(-1, 0)).toThrow(RangeError);
    expect(() => rates.flowing(0.5, 0)).toThrow(RangeError);
    expect(() => new LayerRates(0)).toThrow(RangeError);
    expect(() => new LayerRates(1, { buckets: 1 })).toThrow(RangeError);
    expect(() => new LayerRates(1, { windowMs: 0 })).toThrow(RangeError);
  });
});
