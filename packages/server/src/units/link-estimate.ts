/**
 * What a viewer's downlink carries, as the unit reckons it: the viewer's browser's REMB, raised by
 * probes the link took without loss.
 *
 * A browser's REMB tells congestion quickly (it falls as queueing delay grows), but grows only about
 * 8% a second and to at most 1.5 times what it receives, so on its own a viewer on the lowest layer
 * would need half a minute to earn the top one. So the unit probes (padding up to the next layer's
 * rate, see VideoOutput) and watches for loss: a probe that ended with no more than PROBE_LOSS
 * packets asked again (NACK) confirms its rate. A confirmed rate holds until the link says otherwise:
 * a burst of loss, or a REMB falling below REMB_FALL of its highest since.
 */

/** Packets a probe may see asked again and still count as carried. */
const PROBE_LOSS = 2;
/** Packets asked again within LOSS_WINDOW_MS that end a confirmed rate. */
const LOSS_BURST = 4;
const LOSS_WINDOW_MS = 1000;
/** A REMB this far under its highest since a confirmation ends it (the browser saw delay grow). */
const REMB_FALL = 0.85;

export class LinkEstimate {
  private rembValue: number | undefined;
  private rembPeak = 0;
  private confirmed: number | undefined;
  private probe: { lost: number } | undefined;
  private losses: number[] = [];

  /** The browser's latest REMB (bits/s). */
  remb(bitsPerSecond: number): void {
    this.rembValue = bitsPerSecond;
    this.rembPeak = Math.max(this.rembPeak, bitsPerSecond);
    if (this.confirmed !== undefined && bitsPerSecond < this.rembPeak * REMB_FALL) this.confirmed = undefined;
  }

  /** The browser asked again for `count` packets (a NACK). */
  lost(count: number, nowMs: number): void {
    if (this.probe) this.probe.lost += count;
    for (let i = 0; i < Math.min(count, LOSS_BURST); i++) this.losses.push(nowMs);
    while ((this.losses[0] ?? nowMs) <= nowMs - LOSS_WINDOW_MS) this.losses.shift();
    if (this.losses.length >= LOSS_BURST) {
      this.confirmed = undefined;
      this.losses = [];
    }
  }

  probeStarted(): void {
    this.probe = { lost: 0 };
  }

  /** Whether the running probe saw loss already (it should stop: the link is full). */
  get probeFailing(): boolean {
    return this.probe !== undefined && this.probe.lost > PROBE_LOSS;
  }

  /**
   * The probe ended; `carried` is what the viewer was sent meanwhile (its layer plus the padding,
   * bits/s), confirmed when the probe saw no more than PROBE_LOSS losses. Answers whether it was.
   */
  probeEnded(carried: number): boolean {
    const ok = this.probe !== undefined && this.probe.lost <= PROBE_LOSS;
    this.probe = undefined;
    if (ok) {
      this.confirmed = Math.max(this.confirmed ?? 0, carried);
      this.rembPeak = this.rembValue ?? 0;
    }
    return ok;
  }

  /** The estimate (bits/s), or undefined before the browser's first REMB. */
  get value(): number | undefined {
    if (this.rembValue === undefined) return undefined;
    return Math.max(this.rembValue, this.confirmed ?? 0);
  }
}
