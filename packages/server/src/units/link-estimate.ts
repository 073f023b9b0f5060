/**
 * What a viewer's downlink carries, as the unit reckons it: the viewer's browser's REMB (or, for a
 * browser that sends transport-wide feedback, the unit's own SendSideEstimate in its place; both
 * come in through `remb`), raised by probes the link took, and lowered by the loss it reports.
 *
 * - A browser's REMB grows only about 8% a second and to at most 1.5 times what arrives, so on its
 *   own a viewer on the lowest layer would need half a minute to earn the top one. So the unit
 *   probes (padding rising to the next layer's rate, see VideoOutput). A probe fails once the viewer
 *   asked again (NACK) for more than PROBE_LOSS packets, its REMB fell under PROBE_FALL of the one
 *   the probe started with, or the link was seen queueing (`congested`, from transport-wide
 *   feedback); one that did none of these, and whose link then stays clear for SETTLE_MS, confirms
 *   what it carried.
 * - Behind a full link that drops rather than queues (a token bucket, a congested Wi-Fi), the REMB
 *   may stay well above what gets through (seen: 0.6-1 Mbit/s behind 300 kbit/s), so loss decides
 *   the way down: more than LOSS_SHARE of the packets of the last LOSS_WINDOW_MS asked again caps
 *   the estimate at what is being sent times (1 - half that share), as a sender's loss-based
 *   controller does, and ends any confirmed rate. The cap holds until a probe goes through.
 * - A confirmed rate ends with loss only, not with a REMB under it: the REMB stays under a
 *   confirmed rate by nature (that is why the unit probes), and wobbles by 10-20% on a busy
 *   receiver. A link that only queues, never drops, is therefore followed down only by its REMB
 *   once a loss ended the confirmation: not handled yet.
 */

/** Packets asked again during a probe, or while its link settles, that fail it (a busy receiver asks for the odd late one). */
const PROBE_LOSS = 2;
/** A REMB this far under the one a probe started with fails the probe (a busy receiver's REMB wobbles by a few %). */
const PROBE_FALL = 0.9;
/** After a probe, how long the link must stay clear (no loss, no REMB fall) for it to count (ms). */
export const SETTLE_MS = 1000;
/**
 * The share of packets asked again over LOSS_WINDOW_MS above which the link is full. Not a sender's
 * 10%: a busy receiver asks again for packets that came late, not lost; a full link loses far more.
 */
const LOSS_SHARE = 0.25;
const LOSS_WINDOW_MS = 1000;
/** Fewer packets asked again than this in the window never count as a full link (a few late ones). */
const LOSS_MIN = 10;

export class LinkEstimate {
  private rembValue: number | undefined;
  private confirmed: number | undefined;
  /** What loss allows, until a probe goes through. */
  private cap: number | undefined;
  private probe: { failed: boolean; remb: number; lost: number } | undefined;
  /** A probe that went through, counted once its link settled. */
  private pending: { carried: number; remb: number; at: number; lost: number } | undefined;
  /** Until when loss is a failed probe's aftermath (its queue draining), not the layer's doing (ms). */
  private quietUntil = Number.NEGATIVE_INFINITY;
  /** Packets sent and asked again, per moment, over the last LOSS_WINDOW_MS. */
  private window: { at: number; sent: number; lost: number }[] = [];

  /** The browser's latest REMB (bits/s). */
  remb(bitsPerSecond: number): void {
    this.rembValue = bitsPerSecond;
    if (this.probe) {
      if (bitsPerSecond < this.probe.remb * PROBE_FALL) this.probe.failed = true;
      return;
    }
    if (this.pending && bitsPerSecond < this.pending.remb * PROBE_FALL) this.pending = undefined;
  }

  /**
   * The link is queueing (its delay climbs): a probe has filled it, and fails before it costs the
   * viewer a frame. Outside a probe it changes nothing: a keyframe's burst queues for a moment on
   * any link that carries its layer, and the rate that follows the queue comes in through `remb`.
   */
  congested(): void {
    if (this.probe) this.probe.failed = true;
    else this.pending = undefined;
  }

  /** `count` packets went to the viewer (media and padding). */
  sent(count: number, nowMs: number): void {
    this.note(nowMs, count, 0);
  }

  /**
   * The browser asked again for `count` packets (a NACK) while the viewer is being sent `sending`
   * (bits/s, its layer). Answers whether the loss capped the estimate (the link is full).
   */
  lost(count: number, nowMs: number, sending = 0): boolean {
    if (nowMs < this.quietUntil) return false;
    this.note(nowMs, 0, count);
    if (this.probe) {
      this.probe.lost += count;
      if (this.probe.lost > PROBE_LOSS) this.probe.failed = true;
      return false;
    }
    if (this.pending) {
      this.pending.lost += count;
      if (this.pending.lost > PROBE_LOSS) this.pending = undefined;
      return false;
    }
    let sent = 0;
    let lost = 0;
    for (const moment of this.window) {
      sent += moment.sent;
      lost += moment.lost;
    }
    const share = lost / Math.max(sent, 1);
    if (lost >= LOSS_MIN && share > LOSS_SHARE && sending > 0) {
      const allowed = sending * (1 - Math.min(share, 1) / 2);
      this.cap = Math.min(this.cap ?? Number.POSITIVE_INFINITY, allowed);
      this.confirmed = undefined;
      // Counted once: the next decrease needs new loss at the lower rate.
      this.window = [];
      return true;
    }
    return false;
  }

  /**
   * The viewer has been sent `sending` (bits/s, its layer) for a while: a link that took it for the
   * last LOSS_WINDOW_MS with no packet asked again carries it, so a layer whose own rate grows (a
   * browser ramps a layer for seconds; keyframes swell it) is not moved down from a clean link.
   * The caller says so only once the layer has been held a few seconds (a link too slow for a new
   * layer shows it only as the loss comes in).
   */
  carrying(sending: number, nowMs: number): void {
    // Also while a probe runs or settles: a window of its packets with none lost carried the layer
    // too (probes every few seconds would otherwise keep a rising layer from ever counting).
    if (sending <= 0 || nowMs < this.quietUntil) return;
    const first = this.window[0];
    if (!first || nowMs - first.at < LOSS_WINDOW_MS * 0.9) return;
    if (this.window.some((moment) => moment.lost > 0)) return;
    this.confirmed = Math.max(this.confirmed ?? 0, sending);
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
    if (!probe || probe.failed) {
      // What the probe lost is still being asked again for a while: not the layer's loss.
      this.quietUntil = nowMs + SETTLE_MS;
      this.window = [];
      return false;
    }
    this.pending = { carried, remb: probe.remb, at: nowMs + SETTLE_MS, lost: probe.lost };
    return true;
  }

  /** The estimate at `nowMs` (bits/s), or undefined before the browser's first REMB. */
  estimate(nowMs: number): number | undefined {
    if (this.pending && nowMs >= this.pending.at) {
      this.confirmed = Math.max(this.confirmed ?? 0, this.pending.carried);
      this.cap = undefined;
      this.pending = undefined;
    }
    if (this.rembValue === undefined) return undefined;
    const estimate = Math.max(this.rembValue, this.confirmed ?? 0);
    return this.cap === undefined ? estimate : Math.min(estimate, this.cap);
  }

  private note(at: number, sent: number, lost: number): void {
    const last = this.window.at(-1);
    // Moments 50 ms apart: a bounded window of at most LOSS_WINDOW_MS / 50 entries.
    if (last && at - last.at < 50) {
      last.sent += sent;
      last.lost += lost;
    } else this.window.push({ at, sent, lost });
    while ((this.window[0]?.at ?? at) <= at - LOSS_WINDOW_MS) this.window.shift();
  }
}
