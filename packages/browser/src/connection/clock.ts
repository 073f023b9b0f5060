/**
 * The timers the connection uses; injectable so tests can record or speed up delays.
 *
 * @example
 * connect({ url, site, timers: { setTimeout: (fn, ms) => setTimeout(fn, ms / 10), clearTimeout } });
 */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** A clock: the time in milliseconds plus timers. */
export interface Clock extends Timers {
  now(): number;
}

/**
 * The page's own clock. The globals are called through wrappers: browsers refuse `setTimeout`
 * called on another object ("Illegal invocation").
 */
export function systemClock(overrides: { now?: (() => number) | undefined; timers?: Timers | undefined } = {}): Clock {
  const timers = overrides.timers;
  return {
    now: overrides.now ?? (() => Date.now()),
    setTimeout: timers
      ? (callback, ms) => timers.setTimeout(callback, ms)
      : (callback, ms) => globalThis.setTimeout(callback, ms),
    clearTimeout: timers
      ? (handle) => timers.clearTimeout(handle)
      : (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
  };
}
