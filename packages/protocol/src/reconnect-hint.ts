/**
 * A reconnect hint in a close reason: the service tells a page it closes (4100 after a restart,
 * stop, lost lease or Redis outage) how long to wait, so the pages of a node do not all come back
 * in the same second. The hint is the reason's tail, `reconnect in <ms> ms`, after any readable
 * text: clients that do not know it see an ordinary reason and keep their own backoff.
 *
 * @example
 * withReconnectHint('the service is stopping', 1234); // 'the service is stopping; reconnect in 1234 ms'
 * reconnectHint('the service is stopping; reconnect in 1234 ms'); // 1234
 */

/** Hints above this are not honoured as given: a client waits at most this long (ms). */
export const MAX_RECONNECT_HINT_MS = 60_000;

const HINT = /(?:^|; )reconnect in (\d{1,9}) ms$/;

/** The reason with the hint appended; the delay is rounded and kept within 0..MAX_RECONNECT_HINT_MS. */
export function withReconnectHint(reason: string, delayMs: number): string {
  const ms = Math.min(MAX_RECONNECT_HINT_MS, Math.max(0, Math.round(Number.isFinite(delayMs) ? delayMs : 0)));
  return reason === '' ? `reconnect in ${ms} ms` : `${reason}; reconnect in ${ms} ms`;
}

/** The hinted delay of a close reason (ms, at most MAX_RECONNECT_HINT_MS), or undefined without a hint. */
export function reconnectHint(reason: string): number | undefined {
  const match = HINT.exec(reason);
  if (match?.[1] === undefined) return undefined;
  return Math.min(MAX_RECONNECT_HINT_MS, Number(match[1]));
}
