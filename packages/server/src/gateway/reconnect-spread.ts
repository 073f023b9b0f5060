/**
 * Spreads the reconnects of pages a node closes at once (stop, lost lease, Redis outage) over a
 * window that grows with how many there are, so the node or shard they come back to is not hit
 * by all of them in the same second.
 */
export interface ReconnectSpread {
  /** Reconnects per second the cluster should take from one node's closed pages. */
  ratePerSecond: number;
  /** The widest window (ms), however many pages close. */
  capMs: number;
}

export const DEFAULT_RECONNECT_SPREAD: Readonly<ReconnectSpread> = { ratePerSecond: 500, capMs: 30_000 };

/** The smallest window (ms): a few pages still do not all come back at once. */
const MIN_WINDOW_MS = 1000;

/** max(1 s, pages / rate), capped: the window pages closed together reconnect over (ms). */
export function reconnectWindowMs(pages: number, spread: ReconnectSpread): number {
  const rate = spread.ratePerSecond > 0 ? spread.ratePerSecond : DEFAULT_RECONNECT_SPREAD.ratePerSecond;
  const wanted = Math.max(MIN_WINDOW_MS, Math.ceil((Math.max(0, pages) / rate) * 1000));
  return Math.max(0, Math.min(spread.capMs, wanted));
}

/** A delay uniform over [0, window) from the random source (a broken source gives 0 or the end). */
export function reconnectDelayMs(windowMs: number, random: () => number): number {
  const r = random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
  return Math.min(Math.floor(unit * windowMs), Math.max(0, windowMs - 1));
}

/** One delay per page closed together: each page's own draw over the window all of them share. */
export function reconnectDelays(pages: number, spread: ReconnectSpread, random: () => number): () => number {
  const windowMs = reconnectWindowMs(pages, spread);
  return () => reconnectDelayMs(windowMs, random);
}
