// What every child process of a cluster bench does (never imported by the bench itself).

/** Exit when the bench that started this process is gone (its IPC channel closed), after `onGone`. */
export function watchParent(onGone = () => {}) {
  process.on('disconnect', () => {
    onGone();
    process.exit(0);
  });
}

/** On SIGTERM, SIGINT (Ctrl-C reaches the whole group) or SIGHUP: `cleanup`, then exit. */
export function exitOnSignals(cleanup = () => {}) {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.once(signal, () => {
      cleanup();
      process.exit(0);
    });
  }
}
