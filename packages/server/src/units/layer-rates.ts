/**
 * The bitrate each simulcast layer of a presenter arrives at, over a sliding window, and whether it
 * is flowing at all: what a viewer's layer choice weighs against that viewer's downlink estimate.
 *
 * Each layer counts bytes in a fixed ring of time buckets (by default 10 of 100 ms: a 1 s window),
 * so memory stays the same whatever the packet rate. The rate divides the bytes of the full buckets
 * in the window and of the current, partial one by exactly the time they cover, so a steady flow
 * reads its true rate at any moment; a layer that just started reads low for its first window.
 */
export interface LayerRatesOptions {
  /** The window the rate is measured over and a layer counts as flowing within (ms); 1000 unless set. */
  windowMs?: number;
  /** How many buckets the window is cut into; 10 unless set. */
  buckets?: number;
}

export class LayerRates {
  readonly windowMs: number;
  private readonly buckets: number;
  private readonly bucketMs: number;
  /** Bytes per bucket, `buckets` slots per layer, layer after layer. */
  private readonly bytes: Float64Array;
  /** The newest bucket counted into, per layer (bucket number = floor(ms / bucketMs)). */
  private readonly head: Float64Array;
  /** When each layer's last packet arrived (ms). */
  private readonly lastAt: Float64Array;

  /** @param layers how many layers (0 lowest, `layers - 1` highest). */
  constructor(
    readonly layers: number,
    options: LayerRatesOptions = {},
  ) {
    this.windowMs = options.windowMs ?? 1000;
    this.buckets = options.buckets ?? 10;
    if (!Number.isInteger(layers) || layers < 1) throw new RangeError(`layers must be a positive integer: ${layers}`);
    if (!Number.isInteger(this.buckets) || this.buckets < 2)
      throw new RangeError('buckets must be an integer of at least 2');
    if (!(this.windowMs > 0)) throw new RangeError('windowMs must be positive');
    this.bucketMs = this.windowMs / this.buckets;
    this.bytes = new Float64Array(layers * this.buckets);
    this.head = new Float64Array(layers).fill(Number.NEGATIVE_INFINITY);
    this.lastAt = new Float64Array(layers).fill(Number.NEGATIVE_INFINITY);
  }

  /** Counts a packet of `layer`: its whole size on the wire as RTP (header, payload and padding). */
  add(layer: number, bytes: number, nowMs: number): void {
    this.check(layer);
    const bucket = Math.floor(nowMs / this.bucketMs);
    const base = layer * this.buckets;
    const head = this.head[layer] as number;
    if (bucket > head) {
      // Empty the buckets between the last one counted and this one (at most the whole ring).
      const from = Math.max(head + 1, bucket - this.buckets + 1);
      for (let b = from; b <= bucket; b++) this.bytes[base + this.slot(b)] = 0;
      this.head[layer] = bucket;
    } else if (head - bucket >= this.buckets) {
      return; // Older than the window (a clock that went back a long way): not counted.
    }
    const at = base + this.slot(bucket);
    this.bytes[at] = (this.bytes[at] as number) + bytes;
    if (nowMs > (this.lastAt[layer] as number)) this.lastAt[layer] = nowMs;
  }

  /** The layer's rate over the window ending now, in bits/s. */
  rate(layer: number, nowMs: number): number {
    this.check(layer);
    const bucket = Math.floor(nowMs / this.bucketMs);
    const head = this.head[layer] as number;
    const base = layer * this.buckets;
    let sum = 0;
    // The buckets still held that fall in the window (bucket - buckets, bucket].
    const oldest = Math.max(head - this.buckets + 1, bucket - this.buckets + 1);
    for (let b = Math.min(head, bucket); b >= oldest; b--) sum += this.bytes[base + this.slot(b)] as number;
    const spanMs = (this.buckets - 1) * this.bucketMs + (nowMs - bucket * this.bucketMs);
    return (sum * 8 * 1000) / spanMs;
  }

  /** Whether a packet of the layer arrived within the window. */
  flowing(layer: number, nowMs: number): boolean {
    this.check(layer);
    return nowMs - (this.lastAt[layer] as number) <= this.windowMs;
  }

  /** How long ago the layer's last packet arrived (ms); Infinity before its first. */
  idleFor(layer: number, nowMs: number): number {
    this.check(layer);
    return nowMs - (this.lastAt[layer] as number);
  }

  private slot(bucket: number): number {
    return ((bucket % this.buckets) + this.buckets) % this.buckets;
  }

  private check(layer: number): void {
    if (!Number.isInteger(layer) || layer < 0 || layer >= this.layers) {
      throw new RangeError(`no layer ${layer} (layers 0 to ${this.layers - 1})`);
    }
  }
}
