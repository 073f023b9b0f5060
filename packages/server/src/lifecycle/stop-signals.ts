/**
 * When a service started from the command line stops: on SIGTERM or SIGINT, and, when npm started
 * it (`npm start`, `npx realtime serve`, a package script), once the process npm runs it under is
 * gone. npm forwards SIGTERM and SIGINT to the shell it runs a command in, and /bin/sh (dash on
 * Debian and Ubuntu) dies of SIGTERM without passing it on: the service, left behind, would run on.
 */

/** What the service hears from its process; `processSource()` gives the real one. */
export interface StopSource {
  /** Subscribes to SIGTERM and SIGINT. */
  onSignal(listener: (signal: 'SIGTERM' | 'SIGINT') => void): () => void;
  /** The parent process id now (`process.ppid`). */
  parentPid(): number;
  /** Whether npm started this process (npm sets `npm_lifecycle_event` for its scripts and npx). */
  startedByNpm: boolean;
}

export interface StopHandlers {
  /** The first request to stop: drain, then exit. `reason` is the signal or `launcher gone`. */
  stop(reason: string): void;
  /** Another signal once the drain has begun: exit at once. */
  force(signal: string): void;
}

/**
 * A signal repeated within this long of the first is the same request: a terminal's Ctrl-C reaches
 * npm and the service both, and npm forwards its copy too. A person's second Ctrl-C comes later.
 */
export const REPEAT_MS = 1000;
/** How often the parent is looked at: a stop lags its launcher by at most this. */
export const PARENT_POLL_MS = 250;

/**
 * Calls `stop` once on the first signal (or, under npm, once the parent process is gone), and
 * `force` on a signal that comes more than `REPEAT_MS` after the first. Returns the unsubscribe.
 */
export function handleStopSignals(
  handlers: StopHandlers,
  source: StopSource = processSource(),
  now: () => number = Date.now,
): () => void {
  let stoppedAt: number | undefined;
  let poll: NodeJS.Timeout | undefined;
  const begin = (reason: string) => {
    stoppedAt = now();
    clearInterval(poll);
    handlers.stop(reason);
  };
  const off = source.onSignal((signal) => {
    if (stoppedAt === undefined) begin(signal);
    else if (now() - stoppedAt > REPEAT_MS) handlers.force(signal);
  });
  if (source.startedByNpm) {
    const parent = source.parentPid();
    poll = setInterval(() => {
      if (source.parentPid() !== parent && stoppedAt === undefined) begin('launcher gone');
    }, PARENT_POLL_MS);
    // The watch alone never keeps the process alive.
    poll.unref();
  }
  return () => {
    clearInterval(poll);
    off();
  };
}

/** This process: its signals, its parent, its environment. */
export function processSource(): StopSource {
  return {
    onSignal: (listener) => {
      const term = () => listener('SIGTERM');
      const int = () => listener('SIGINT');
      process.on('SIGTERM', term);
      process.on('SIGINT', int);
      return () => {
        process.off('SIGTERM', term);
        process.off('SIGINT', int);
      };
    },
    parentPid: () => process.ppid,
    startedByNpm: process.env.npm_lifecycle_event !== undefined,
  };
}
