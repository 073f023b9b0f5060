import { describe, expect, it } from 'vitest';
import { MAX_RECONNECT_HINT_MS, reconnectHint, withReconnectHint } from './reconnect-hint.js';

describe('reconnect hint', () => {
  it('appends `reconnect in <ms> ms` to the reason and reads it back', () => {
    expect(withReconnectHint('the service is stopping', 1234)).toBe('the service is stopping; reconnect in 1234 ms');
    expect(withReconnectHint('', 5)).toBe('reconnect in 5 ms');
    expect(reconnectHint('the service is stopping; reconnect in 1234 ms')).toBe(1234);
    expect(reconnectHint('reconnect in 0 ms')).toBe(0);
  });

  it('rounds and bounds the delay it writes, and caps what it reads', () => {
    expect(withReconnectHint('x', 12.6)).toBe('x; reconnect in 13 ms');
    expect(withReconnectHint('x', -5)).toBe('x; reconnect in 0 ms');
    expect(withReconnectHint('x', Number.NaN)).toBe('x; reconnect in 0 ms');
    expect(withReconnectHint('x', 10 ** 9)).toBe(`x; reconnect in ${MAX_RECONNECT_HINT_MS} ms`);
    expect(reconnectHint('reconnect in 999999999 ms')).toBe(MAX_RECONNECT_HINT_MS);
  });

  it('finds no hint in ordinary reasons', () => {
    for (const reason of [
      '',
      'restarting',
      'please reconnect in 5 ms',
      'reconnect in 5 ms.',
      'reconnect in -5 ms',
      'reconnect in 5s',
    ]) {
      expect(reconnectHint(reason)).toBeUndefined();
    }
  });

  it('fits in a close reason (123 bytes) after the longest reason the service gives', () => {
    const reason = withReconnectHint('this node lost its place in the cluster; reconnect', MAX_RECONNECT_HINT_MS);
    expect(new TextEncoder().encode(reason).length).toBeLessThanOrEqual(123);
  });
});
