import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { handleStopSignals, PARENT_POLL_MS, REPEAT_MS, type StopSource } from './stop-signals.js';

/** A process whose signals and parent the test drives. */
function fakeProcess(startedByNpm: boolean) {
  let listener: ((signal: 'SIGTERM' | 'SIGINT') => void) | undefined;
  const state = { parent: 100, subscribed: false };
  const source: StopSource = {
    onSignal: (heard) => {
      listener = heard;
      state.subscribed = true;
      return () => {
        state.subscribed = false;
      };
    },
    parentPid: () => state.parent,
    startedByNpm,
  };
  const signal = (name: 'SIGTERM' | 'SIGINT') => listener?.(name);
  return { source, state, signal };
}

function recorder() {
  const calls: string[] = [];
  return {
    calls,
    handlers: { stop: (r: string) => calls.push(`stop ${r}`), force: (s: string) => calls.push(`force ${s}`) },
  };
}

describe('handleStopSignals', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops once on the first signal, SIGTERM or SIGINT', () => {
    for (const name of ['SIGTERM', 'SIGINT'] as const) {
      const proc = fakeProcess(false);
      const { calls, handlers } = recorder();
      handleStopSignals(handlers, proc.source);
      proc.signal(name);
      expect(calls).toEqual([`stop ${name}`]);
    }
  });

  it('a copy of the signal within REPEAT_MS (npm forwarding a Ctrl-C the service also got) does not force', () => {
    const proc = fakeProcess(true);
    const { calls, handlers } = recorder();
    handleStopSignals(handlers, proc.source);
    proc.signal('SIGINT');
    vi.advanceTimersByTime(REPEAT_MS - 1);
    proc.signal('SIGINT');
    expect(calls).toEqual(['stop SIGINT']);
  });

  it('a signal after REPEAT_MS forces the exit', () => {
    const proc = fakeProcess(false);
    const { calls, handlers } = recorder();
    handleStopSignals(handlers, proc.source);
    proc.signal('SIGTERM');
    vi.advanceTimersByTime(REPEAT_MS + 1);
    proc.signal('SIGINT');
    expect(calls).toEqual(['stop SIGTERM', 'force SIGINT']);
  });

  it('started by npm: stops once the parent (npm, or the shell npm runs it in) is gone, and only once', () => {
    const proc = fakeProcess(true);
    const { calls, handlers } = recorder();
    handleStopSignals(handlers, proc.source);
    vi.advanceTimersByTime(PARENT_POLL_MS * 4);
    expect(calls).toEqual([]);
    proc.state.parent = 1;
    vi.advanceTimersByTime(PARENT_POLL_MS);
    expect(calls).toEqual(['stop launcher gone']);
    vi.advanceTimersByTime(PARENT_POLL_MS * 4);
    proc.signal('SIGTERM');
    expect(calls).toEqual(['stop launcher gone']);
  });

  it('not started by npm: a parent that goes away is not a stop (a service may be left running on purpose)', () => {
    const proc = fakeProcess(false);
    const { calls, handlers } = recorder();
    handleStopSignals(handlers, proc.source);
    proc.state.parent = 1;
    vi.advanceTimersByTime(PARENT_POLL_MS * 4);
    expect(calls).toEqual([]);
  });

  it('the returned function unsubscribes and ends the watch', () => {
    const proc = fakeProcess(true);
    const { calls, handlers } = recorder();
    const off = handleStopSignals(handlers, proc.source);
    off();
    expect(proc.state.subscribed).toBe(false);
    proc.state.parent = 1;
    vi.advanceTimersByTime(PARENT_POLL_MS * 4);
    expect(calls).toEqual([]);
  });
});
