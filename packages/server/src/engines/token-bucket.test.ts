import { describe, expect, it } from 'vitest';
import { refill } from './token-bucket.js';

describe('refill', () => {
  it('adds perSecond tokens a second since the last time, up to the burst', () => {
    expect(refill(0, 1000, 1500, 10, 20)).toBe(5);
    expect(refill(2.5, 0, 100, 10, 20)).toBe(3.5);
    expect(refill(19, 0, 10_000, 10, 20)).toBe(20);
  });

  it('keeps a debt below zero, repaid as time passes (the frame budget goes below zero)', () => {
    expect(refill(-5, 0, 200, 10, 20)).toBe(-3);
  });

  it('refills nothing and takes nothing away when the clock is behind the last time', () => {
    expect(refill(4, 2000, 1000, 10, 20)).toBe(4);
    expect(refill(4, 2000, 2000, 10, 20)).toBe(4);
    expect(refill(30, 2000, 1000, 10, 20)).toBe(20);
  });
});
