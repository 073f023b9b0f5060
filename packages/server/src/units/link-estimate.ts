/**
 * What a viewer's downlink carries, as the unit reckons it: the viewer's browser's REMB, raised by
 * probes the link took.
 *
 * A browser's REMB tells congestion quickly (it falls as queueing delay grows), but grows only about
 * 8% a second and to at most 1.5 times what it receives, so on its own a viewer on the lowest layer
 * would need half a minute to earn the top one. So the unit probes (padding rising to the next
 * layer's rate, see VideoOutput). A probe fails once the viewer asked again (NACK) for more than
 * PROBE_LOSS packets or its REMB fell under PROBE_FALL of the one the probe started with (the queue
 * grew); one that did neither, and whose link then settles for SETTLE_MS without either,
 * confirms what it carried.
 * A confirmed rate holds until the link says otherwise: a burst of loss, or a REMB under REMB_FALL
 * of what the viewer is being sent (a browser's REMB stays above what it receives unless its queue
 * grows; its swings above that, under a busy CPU, are no sign of a full link).
 */

/** Packets asked again within LOSS_WINDOW_MS that end a confirmed rate. */
const LOSS_BURST = 8;
const LOSS_WINDOW_MS = 1000;
/** A REMB this far under what the viewer is being sent ends a confirmed rate. */
const REMB_FALL = 0.9;
/** A REMB this far under the one a probe started with fails the probe (a busy receiver's REMB wobbles by a few %). */
const PROBE_FALL = 0.9;
/** Packets asked again during a probe, or while its link settles, that fail it (a busy receiver asks for the odd late one). */
const PROBE_LOSS = 2;
/** After a probe, how long the link must stay clear (no loss, no REMB fall) for it to count (ms). */
const SETTLE_MS = 1000;

export class LinkEstimate {
  private rembValue: number | undefined;
  private confirmed: number | undefined;
  private probe: { failed: boolean; remb: number; lost: number } | undefined;
  /** A probe that went through, counted once its link settled. */
  private pending: { carried: number; remb: number; at: number; lost: number } | undefined;
  private losses: number[] = [];

  /** The browser's latest REMB (bits/s), while the viewer is being sent `sending` (bits/s, its layer). */
  remb(bitsPerSecond: number, sending = 0): void {
    this.rembValue = bitsPerSecond;
    if (this.probe) {
      if (bitsPerSecond < this.probe.remb * PROBE_FALL) this.probe.failed = true;
      return;
    }
    if (this.pending) {
      if (bitsPerSecond < this.pending.remb * PROBE_FALL) this.pending = undefined;
      return;
    }
    if (this.confirmed !== undefined && bitsPerSecond < sending * REMB_FALL) this.confirmed = undefined;
  }

  /** The browser asked again for `count` packets (a NACK). */
  lost(count: number, nowMs: number): void {
    if (this.probe) {
      this.probe.lost += count;
      if (this.probe.lost > PROBE_LOSS) this.probe.failed = true;
      return;
    }
    if (this.pending) {
      this.pending.lost += count;
      if (this.pending.lost > PROBE_LOSS) this.pending = undefined;
      return;
    }
    for (let i = 0; i < Math.min(count, LOSS_BURST); i++) this.losses.push(nowMs);
    while ((this.losses[0] ?? nowMs) <= nowMs - LOSS_WINDOW_MS) this.losses.shift();
    if (this.losses.length >= LOSS_BURST) {
      this.confirmed = undefined;
      this.losses = [];
    }
  }

  probeStarted(): void {
    this.pending = undefined;
    this.probe = { failed: false, remb: this.rembValue ?? 0, lost: 0 };
  }

  /** Whether the running probe failed already (it should stop: the link is full). */
  get probeFailing(): boolean {
    return this.probe?.failed === true;
  }

  /**
   * The probe ended; `carried` is the most the viewer was sent meanwhile (its layer plus the
   * padding, bits/s). Answers whether it went through (it counts once the link settles).
   */
  probeEnded(carried: number, nowMs: number): boolean {
    const probe = this.probe;
    this.probe = undefined;
    if (!probe || probe.failed) return false;
    this.pending = { carried, remb: probe.remb, at: nowMs + SETTLE_MS, lost: probe.lost };
    return true;
  }

  /** The estimate at `nowMs` (bits/s), or undefined before the browser's first REMB. */
  estimate(nowMs: number): number | undefined {
    if (this.pending && nowMs >= this.pending.at) {
      this.confirmed = Math.max(this.confirmed ?? 0, this.pending.carried);
      this.pending = undefined;
    }
    if (this.rembValue === undefined) return undefined;
    return Math.max(this.rembValue, this.confirmed ?? 0);
  }
}
