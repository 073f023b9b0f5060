import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StoreLease } from './store-lease.js';

afterEach(() => {
  vi.useRealTimers();
});

const LEASE = 3000;

/** A lease over a fake store that is down while `down` is true, recording each call in order. */
function leaseOverFakeStore() {
  const state = { down: false, calls: [] as string[] };
  const fail = () => {
    if (state.down) throw new Error('the store does not answer');
  };
  const lease = new StoreLease({
    leaseMs: LEASE,
    sweepMs: 100,
    log: pino({ level: 'silent' }),
    what: 'test',
    now: Date.now,
    renew: async () => {
      state.calls.push('renew');
      fail();
    },
    sweep: async () => {
      state.calls.push('sweep');
      fail();
    },
  });
  return { lease, state };
}

describe('StoreLease', () => {
  it('after the store failed, renews first and sweeps only once renewals have held for a whole lease', async () => {
    vi.useFakeTimers();
    const { lease, state } = leaseOverFakeStore();
    await lease.start();
    await vi.advanceTimersByTimeAsync(LEASE);
    expect(state.calls.filter((c) => c === 'sweep').length).toBeGreaterThan(0);

    // The store is away for longer than a lease: every node's lease ran out meanwhile.
    state.down = true;
    await vi.advanceTimersByTimeAsync(2 * LEASE);
    state.down = false;
    state.calls.length = 0;
    // Back: the first call is a renewal, and no sweep comes before this node renewed for a lease
    // (the other nodes renew meanwhile, so nobody's pages are taken for the outage).
    await vi.advanceTimersByTimeAsync(LEASE - 1);
    expect(state.calls[0]).toBe('renew');
    expect(state.calls).not.toContain('sweep');
    await vi.advanceTimersByTimeAsync(LEASE / 10 + 1);
    expect(state.calls).toContain('sweep');
    lease.close();
  });

  it('a sweep that failed also holds the sweeps back until renewals have held for a lease', async () => {
    vi.useFakeTimers();
    const { lease, state } = leaseOverFakeStore();
    await lease.start();
    // Down for less than a renewal period: only a sweep saw it.
    state.down = true;
    await vi.advanceTimersByTimeAsync(LEASE / 10);
    state.down = false;
    state.calls.length = 0;
    await vi.advanceTimersByTimeAsync(LEASE - 1);
    expect(state.calls[0]).toBe('renew');
    expect(state.calls).not.toContain('sweep');
    await vi.advanceTimersByTimeAsync(LEASE / 3);
    expect(state.calls).toContain('sweep');
    lease.close();
  });

  it('sweeps on its timer while the store answers', async () => {
    vi.useFakeTimers();
    const { lease, state } = leaseOverFakeStore();
    await lease.start();
    await vi.advanceTimersByTimeAsync(LEASE);
    // Every sweepMs (100 ms here, less than a tenth of the lease).
    expect(state.calls.filter((c) => c === 'sweep')).toHaveLength(LEASE / 100);
    lease.close();
  });
});
