/**
 * Dynacast: how many of the presenter's layers (lowest first) its viewers can use, so the
 * presenter's browser stops encoding and sending the others (LiveKit's dynacast). werift cannot
 * pause a layer it receives, so the unit tells the presenter's page, whose SDK turns the layers off
 * with `setParameters` (`active: false`).
 *
 * A viewer can use the layers up to the smallest one that covers the size it asked for (its
 * element's, adaptive stream), or all of them when it asked for none or no known layer covers it; a
 * paused viewer needs none. The lowest layer always stays (a viewer coming in starts there), and
 * with no viewer at all nothing is turned off: there is nobody to judge by, and a presenter alone
 * keeps its uplink estimate up for the first viewer. Layers are turned on at once and off only once
 * no viewer used them for OFF_AFTER_MS, so a resized element does not make the encoder flap.
 */
import { coveringLayer, type LayerState } from './layer-choice.js';
import type { VideoWants } from './video-wants.js';

/** How long no viewer may use a layer before it is turned off (ms). */
export const OFF_AFTER_MS = 3000;

export class LayerDemand {
  /** How many layers the presenter was last told to send; undefined: all, as it starts. */
  private sending: number | undefined;
  /** Since when fewer layers than sent have been enough (ms). */
  private fewerSince: number | undefined;

  /**
   * The number of lowest layers to send, when it changed (undefined otherwise). `layers` are the
   * presenter's, lowest first (sizes as last seen, flowing or not); `wants` each viewer's.
   */
  update(layers: readonly LayerState[], wants: readonly VideoWants[], nowMs: number): number | undefined {
    const count = layers.length;
    if (count < 2) return undefined;
    const needed = wants.length === 0 ? count : Math.max(1, ...wants.map((w) => layersFor(layers, w)));
    const current = this.sending ?? count;
    if (needed >= current) {
      this.fewerSince = undefined;
      if (needed === current) return undefined;
      this.sending = needed;
      return needed;
    }
    this.fewerSince ??= nowMs;
    if (nowMs - this.fewerSince < OFF_AFTER_MS) return undefined;
    this.fewerSince = undefined;
    this.sending = needed;
    return needed;
  }
}

/**
 * How many of the lowest layers one viewer can use: up to the one that covers its box as the layer
 * choice reads it (whether flowing or turned off: a layer off keeps the size of its last keyframe).
 */
function layersFor(layers: readonly LayerState[], wants: VideoWants): number {
  if (wants.paused === true) return 0;
  return (coveringLayer(layers, wants) ?? layers.length - 1) + 1;
}
