import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../test/fake-service.js';
import { Watchdog } from './heartbeat.js';

describe('watchdog', () => {
  it('fires once the limit passes with nothing fed, counting from the last feed', () => {
    const clock = new ManualClock();
    const silences: number[] = [];
    const watchdog = new Watchdog(clock, (silent) => silences.push(silent));
    watchdog.arm(100);
    clock.advance(60);
    watchdog.feed();
    clock.advance(99);
    expect(silences).toEqual([]);
    clock.advance(1);
    expect(silences).toEqual([100]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('keeps a single timer however often it is fed, and holds none once stopped', () => {
    const clock = new ManualClock();
    const watchdog = new Watchdog(clock, () => {
      throw new Error('must not fire');
    });
    watchdog.arm(50);
    for (let i = 0; i < 100; i++) {
      clock.advance(10);
      watchdog.feed();
      expect(clock.pendingTimers).toBe(1);
    }
    watchdog.stop();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(1000);
  });
});
