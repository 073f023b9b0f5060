// What every child process of a cluster bench does (never imported by the bench itself).

/**
 * Exit when the bench that started this process is gone (its IPC channel closed), after `onGone`;
 * `delayMs` first (Redis's keeper waits for the nodes to go, so they log no errors about it).
 */
export function watchParent(onGone = () => {}, delayMs = 0) {
  process.on('disconnect', () =>
    setTimeout(() => {
      onGone();
      process.exit(0);
    }, delayMs),
  );
}

/** On SIGTERM, SIGINT (Ctrl-C reaches the whole group) or SIGHUP: after `delayMs`, `cleanup`, then exit. */
export function exitOnSignals(cleanup = () => {}, delayMs = 0) {
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.once(signal, () =>
      setTimeout(() => {
        cleanup();
        process.exit(0);
      }, delayMs),
    );
  }
}
