import type { Seat } from '../core/hub.js';

/**
 * After a replay: the live frames that came during it go to the page in order, the ones the replay
 * already carried dropped; then the seat takes live frames directly. Live frames of replayed events
 * may still be on their way: the hub drops them (Seat.replayed).
 */
export function drainLive(seat: Seat, replayed: Set<string>): void {
  for (;;) {
    const waiting = seat.replay ?? [];
    seat.replay = [];
    if (waiting.length === 0) break;
    for (const live of waiting) {
      if (live.id === undefined || !replayed.has(live.id)) seat.page.deliver(live.frame);
    }
  }
  seat.replay = undefined;
  seat.replayBytes = 0;
  let newest: string | undefined;
  for (const id of replayed) newest = id;
  seat.replayed = newest === undefined ? undefined : { ids: replayed, newest };
}
