import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay, DEFAULT_BACKOFF } from './backoff.js';

describe('backoff', () => {
  it('is random() x min(cap, base x 2^attempt): full jitter', () => {
    expect(backoffDelay(0, 500, 30_000, () => 1)).toBe(500);
    expect(backoffDelay(3, 500, 30_000, () => 1)).toBe(4000);
    expect(backoffDelay(3, 500, 30_000, () => 0.25)).toBe(1000);
    expect(backoffDelay(3, 500, 30_000, () => 0)).toBe(0);
    expect(backoffDelay(6, 500, 30_000, () => 1)).toBe(30_000);
    expect(backoffDelay(10_000, 500, 30_000, () => 1)).toBe(30_000);
  });

  it('keeps a broken random source within [0, ceiling]', () => {
    expect(backoffDelay(0, 500, 30_000, () => 7)).toBe(500);
    expect(backoffDelay(0, 500, 30_000, () => -1)).toBe(0);
    expect(backoffDelay(0, 500, 30_000, () => Number.NaN)).toBe(0);
  });

  it('grows per attempt until reset, from 500 ms (reconnect) or 5 s (back off), capped at 30 s', () => {
    const backoff = new Backoff(DEFAULT_BACKOFF, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7].map(() => backoff.next('reconnect'))).toEqual([
      500, 1000, 2000, 4000, 8000, 16_000, 30_000,
    ]);
    backoff.reset();
    expect([1, 2, 3, 4].map(() => backoff.next('backoff'))).toEqual([5000, 10_000, 20_000, 30_000]);
    expect(backoff.attempt).toBe(4);
  });

  it('skip() counts a step without a draw: the service gave that delay', () => {
    const backoff = new Backoff(DEFAULT_BACKOFF, () => 1);
    backoff.skip();
    expect(backoff.attempt).toBe(1);
    expect(backoff.next('reconnect')).toBe(1000);
  });
});
