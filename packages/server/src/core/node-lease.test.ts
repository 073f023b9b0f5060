import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PresenceStore } from '../engines/types.js';
import { NodeLease } from './node-lease.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('NodeLease', () => {
  it('says the lease lapsed when a renewal after the first finds it taken, once per lapse', async () => {
    vi.useFakeTimers();
    // What the store answers to each renewal: the first takes the lease; the fourth finds it swept.
    const answers = [false, true, true, false, true];
    const presence = {
      renew: async () => answers.shift() ?? true,
      sweep: async () => [],
    } as unknown as PresenceStore;
    const lapsed = vi.fn();
    const lease = new NodeLease({
      node: 'na',
      presence,
      departures: { report: async () => {} },
      log: pino({ level: 'silent' }),
      now: () => 0,
      leaseMs: 300,
      lapsed,
    });
    await lease.start();
    expect(lapsed).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(200);
    expect(lapsed).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(100);
    expect(lapsed).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(lapsed).toHaveBeenCalledTimes(1);
    lease.close();
  });
});
