/**
 * Which simulcast layer one viewer gets, from the layers' measured rates, the viewer's downlink
 * estimate (REMB or transport-cc), the size its video element asked for and whether it paused video.
 * Deterministic: the caller passes the time in and calls `update` whenever something changed (an
 * estimate arrived, a layer started or stopped, the viewer asked for a size) or on a tick; there are
 * no timers inside.
 *
 * Rules, in the order they apply:
 * 1. Paused: no video (`target` undefined); the layer is chosen afresh on resume.
 * 2. Only flowing layers are candidates.
 * 3. Size: with `maxWidth`/`maxHeight` asked, the candidates stop at the smallest flowing layer of
 *    known size that covers the asked box, so the picture is never blurry and never larger than
 *    needed (as LiveKit's adaptive stream). With `fit: 'contain'` (the default, a `<video>` element's
 *    own) a layer covers the box when its width or its height reaches the box's: the frame fitted
 *    into the box is then shown no larger than the layer; with `fit: 'cover'` both must. Layers of
 *    unknown size never stop the candidates; when no layer covers the box, all flowing layers remain.
 * 4. Start (first update, after a pause, or when the layer in use stopped flowing or went above the
 *    size limit): with an estimate, the highest candidate whose rate fits it (not above the layer in
 *    use, when replacing one), the lowest when none fits. With no estimate yet, the lowest candidate
 *    (its small keyframe reaches the viewer soonest and nothing is known of the link; the estimate
 *    then lifts it), or, replacing a layer, the highest candidate below it. Without an estimate the
 *    layer stays where it is: a viewer that never sends one stays on the lowest layer.
 * 5. Down at once: when the current layer's rate exceeds the estimate, to the highest lower
 *    candidate that fits, the lowest when none does (so a viewer on a shrinking link keeps getting
 *    frames instead of freezing behind a queue). For `upGraceMs` after a move up, only when it
 *    exceeds the estimate times `upGraceMargin`: the move asked for the layer's keyframe, which
 *    swells its measured rate for a second, and the estimate covered its rate with a margin.
 *    A `ceiling` (what the others sharing the viewer's link leave) bounds the start and every move
 *    up, and is what probes must lift; it never moves the viewer down.
 * 6. Up after a hold: when the estimate has covered the next candidate's rate × `upMargin` for
 *    `holdMs` without a break, one layer up.
 * 7. Probe: a receiver's REMB estimate only rises to about 1.5× what it receives, so a viewer on a
 *    low layer cannot earn the next one by itself. When the next candidate does not fit yet, the
 *    current layer does, the current layer has been held for `holdMs` and no probe ran in the last
 *    `probeWaitMs`, the answer carries a `probe`: padding at the next layer's rate minus the
 *    current one's for `probeMs`, so the estimate can grow. The same probe is answered on every
 *    update until `untilMs` (the caller pads while its clock is before `untilMs`); a move up ends it.
 *    A probe whose estimate did not rise by `probeRise` (judged `probeSettleMs` after its end), one
 *    the caller saw fail (`probeFailed`, judged then), or one during which the layer had to move
 *    down, doubles the wait before the next (up to `maxProbeWaitMs`); one that worked resets it. A
 *    move down also puts the next probe off by the current wait.
 */

export interface LayerState {
  /** The layer's measured rate (bits/s). */
  rate: number;
  /** Whether packets of the layer arrive. */
  flowing: boolean;
  /** The layer's picture size, when known (from its last keyframe). */
  width?: number;
  height?: number;
}

export interface LayerInput {
  nowMs: number;
  /** The presenter's layers, lowest first. */
  layers: readonly LayerState[];
  /** The viewer's downlink estimate (bits/s); undefined while none is known yet. */
  estimate?: number;
  /**
   * The most the viewer may move up to (bits/s), below the estimate: a bound on starting and moving
   * up (and on what a probe must earn), never a reason to move down. A page taking several streams
   * through one link gets what the others leave of what the link was seen to carry (PageShare.room).
   */
  ceiling?: number;
  /** The size the viewer shows the video at (its element's size in device pixels). */
  maxWidth?: number;
  maxHeight?: number;
  /** How the element fits the picture into that size; `contain` unless set. */
  fit?: 'contain' | 'cover';
  /** The viewer asked for no video (hidden element). */
  paused?: boolean;
}

export interface LayerProbe {
  /** Padding to add to the viewer's stream (bits/s). */
  bitsPerSecond: number;
  /** Until when (ms, the caller's clock). */
  untilMs: number;
}

export interface LayerDecision {
  /** The layer to forward (index into `layers`); undefined: send no video. */
  target: number | undefined;
  probe?: LayerProbe;
}

export interface LayerAllocatorOptions {
  /** The estimate must cover the next layer's rate times this to move up; 1.1 unless set. */
  upMargin?: number;
  /** How long it must have covered it (ms); 1500 unless set. Also the settle time before a probe. */
  holdMs?: number;
  /** How long a probe pads (ms); 2000 unless set. */
  probeMs?: number;
  /** The wait between probes (ms); 5000 unless set, doubled after each probe that failed. */
  probeWaitMs?: number;
  /** The longest wait between probes (ms); 60000 unless set. */
  maxProbeWaitMs?: number;
  /** A probe worked when the estimate rose to at least this times where it started; 1.1 unless set. */
  probeRise?: number;
  /**
   * How long after a probe's end it is judged (ms): the estimate counts what a probe carried only
   * once its link stayed clear a while (LinkEstimate), so one judged at its end would always read
   * as failed, and double the wait. 0 unless set.
   */
  probeSettleMs?: number;
  /** After a move up, how long the layer may exceed the estimate by `upGraceMargin` (ms); 0 unless set. */
  upGraceMs?: number;
  /** See `upGraceMs`; 1.5 unless set. */
  upGraceMargin?: number;
  /**
   * Each wait between probes is lengthened by up to this share of itself, at random (`random`), so
   * the connections of one page (several streams over one link) do not probe in step; 0 unless set.
   */
  probeJitter?: number;
  /** A number in [0, 1); Math.random unless set. */
  random?: () => number;
}

interface RunningProbe {
  bitsPerSecond: number;
  untilMs: number;
  startEstimate: number;
}

export class LayerAllocator {
  private readonly upMargin: number;
  private readonly holdMs: number;
  private readonly probeMs: number;
  private readonly probeWaitMs: number;
  private readonly maxProbeWaitMs: number;
  private readonly probeRise: number;
  private readonly probeSettleMs: number;
  private readonly upGraceMs: number;
  private readonly upGraceMargin: number;
  private readonly probeJitter: number;
  private readonly random: () => number;
  /** When the viewer last moved up a layer (ms). */
  private movedUpAt = Number.NEGATIVE_INFINITY;

  private current: number | undefined;
  /** When the current layer was chosen (ms). */
  private changedAt = Number.NEGATIVE_INFINITY;
  /** Since when the estimate has covered the next layer (ms), while it does. */
  private upSince: number | undefined;
  private probe: RunningProbe | undefined;
  private probeWait: number;
  private nextProbeAt = Number.NEGATIVE_INFINITY;

  constructor(options: LayerAllocatorOptions = {}) {
    this.upMargin = options.upMargin ?? 1.1;
    this.holdMs = options.holdMs ?? 1500;
    this.probeMs = options.probeMs ?? 2000;
    this.probeWaitMs = options.probeWaitMs ?? 5000;
    this.maxProbeWaitMs = options.maxProbeWaitMs ?? 60_000;
    this.probeRise = options.probeRise ?? 1.1;
    this.probeSettleMs = options.probeSettleMs ?? 0;
    this.upGraceMs = options.upGraceMs ?? 0;
    this.upGraceMargin = options.upGraceMargin ?? 1.5;
    this.probeJitter = options.probeJitter ?? 0;
    this.random = options.random ?? Math.random;
    this.probeWait = this.probeWaitMs;
  }

  /** The layer chosen by the last update. */
  get target(): number | undefined {
    return this.current;
  }

  update(input: LayerInput): LayerDecision {
    const { nowMs, layers, estimate } = input;
    // What moves up (and the start) must fit: the estimate, and the ceiling when set.
    const room = estimate === undefined ? undefined : Math.min(estimate, input.ceiling ?? Number.POSITIVE_INFINITY);
    if (input.paused) return this.none();
    const cap = sizeCap(input);
    const candidate = (i: number) => i <= cap && layers[i]?.flowing === true;
    const lowest = nextCandidate(layers, -1, candidate);
    if (lowest === undefined) return this.none();

    if (this.current === undefined || !candidate(this.current)) {
      // A fresh start, or the layer in use stopped flowing or went above the size asked for.
      const start =
        estimate === undefined && this.current === undefined
          ? lowest
          : (highestFitting(layers, this.current ?? layers.length - 1, candidate, room ?? Number.POSITIVE_INFINITY) ??
            lowest);
      this.change(start, nowMs);
      this.probe = undefined;
      return { target: start };
    }
    if (estimate === undefined || room === undefined) return { target: this.current };

    const current = this.current;
    if (this.probe !== undefined && nowMs >= this.probe.untilMs + this.probeSettleMs) {
      this.judgeProbe(room >= this.probe.startEstimate * this.probeRise, nowMs);
    }

    const currentRate = (layers[current] as LayerState).rate;
    const grace = nowMs - this.movedUpAt < this.upGraceMs ? this.upGraceMargin : 1;
    if (currentRate > estimate * grace) {
      const down = highestFitting(layers, current - 1, candidate, estimate) ?? lowest;
      if (this.probe !== undefined) this.judgeProbe(false, nowMs);
      this.nextProbeAt = Math.max(this.nextProbeAt, nowMs + this.jittered(this.probeWait));
      this.upSince = undefined;
      if (down !== current) this.change(down, nowMs);
      return { target: this.current };
    }

    const next = nextCandidate(layers, current, candidate);
    if (next === undefined) {
      this.upSince = undefined;
      // At the top (or the size asked): nothing to earn.
      return this.answer(current, nowMs);
    }
    const nextRate = (layers[next] as LayerState).rate;
    if (room >= nextRate * this.upMargin) {
      this.upSince ??= nowMs;
      if (nowMs - this.upSince >= this.holdMs) {
        if (this.probe !== undefined) this.judgeProbe(true, nowMs);
        this.change(next, nowMs);
        this.movedUpAt = nowMs;
        return { target: next };
      }
    } else {
      this.upSince = undefined;
      if (
        this.probe === undefined &&
        nowMs >= this.nextProbeAt &&
        nowMs - this.changedAt >= this.holdMs &&
        nextRate > currentRate
      ) {
        this.probe = {
          bitsPerSecond: nextRate - currentRate,
          untilMs: nowMs + this.probeMs,
          startEstimate: room,
        };
      }
    }
    return this.answer(current, nowMs);
  }

  /** The current layer, with the running probe if any (not while an ended one settles). */
  private answer(current: number, nowMs: number): LayerDecision {
    const probe = this.probe;
    if (probe === undefined || nowMs >= probe.untilMs) return { target: current };
    return { target: current, probe: { bitsPerSecond: probe.bitsPerSecond, untilMs: probe.untilMs } };
  }

  /**
   * The caller saw the running probe fail (its link lost packets or queued): judged now, not at its
   * end and settle, so the wait before the next runs from the failure.
   */
  probeFailed(nowMs: number): void {
    if (this.probe !== undefined) this.judgeProbe(false, nowMs);
  }

  private none(): LayerDecision {
    this.current = undefined;
    this.upSince = undefined;
    this.probe = undefined;
    return { target: undefined };
  }

  private change(layer: number, nowMs: number): void {
    this.current = layer;
    this.changedAt = nowMs;
    this.upSince = undefined;
  }

  private jittered(waitMs: number): number {
    return this.probeJitter === 0 ? waitMs : waitMs * (1 + this.probeJitter * this.random());
  }

  /** Ends the running probe: the wait before the next resets when it worked, doubles when not. */
  private judgeProbe(worked: boolean, nowMs: number): void {
    this.probeWait = worked ? this.probeWaitMs : Math.min(this.probeWait * 2, this.maxProbeWaitMs);
    this.nextProbeAt = nowMs + this.jittered(this.probeWait);
    this.probe = undefined;
  }
}

/** The highest layer index the asked size allows (the last one when nothing limits). */
function sizeCap(input: LayerInput): number {
  return coveringLayer(input.layers, input, (layer) => layer.flowing) ?? input.layers.length - 1;
}

/**
 * The lowest of `layers` (of known size, and `eligible`) that covers the box asked for, as rule 3
 * reads it; undefined when no size is asked or none covers it.
 */
export function coveringLayer(
  layers: readonly LayerState[],
  box: Pick<LayerInput, 'maxWidth' | 'maxHeight' | 'fit'>,
  eligible: (layer: LayerState) => boolean = () => true,
): number | undefined {
  const { maxWidth, maxHeight } = box;
  if (maxWidth === undefined && maxHeight === undefined) return undefined;
  const cover = box.fit === 'cover';
  for (let i = 0; i < layers.length; i++) {
    const layer = layers[i] as LayerState;
    if (!eligible(layer) || layer.width === undefined || layer.height === undefined) continue;
    const wide = maxWidth === undefined || layer.width >= maxWidth;
    const tall = maxHeight === undefined || layer.height >= maxHeight;
    // With one side asked only, that side decides, whatever the fit.
    const covers =
      maxWidth === undefined || maxHeight === undefined ? wide && tall : cover ? wide && tall : wide || tall;
    if (covers) return i;
  }
  return undefined;
}

/** The first candidate above `after`. */
function nextCandidate(
  layers: readonly LayerState[],
  after: number,
  candidate: (i: number) => boolean,
): number | undefined {
  for (let i = after + 1; i < layers.length; i++) if (candidate(i)) return i;
  return undefined;
}

/** The highest candidate at or below `ceiling` whose rate fits `budget`. */
function highestFitting(
  layers: readonly LayerState[],
  ceiling: number,
  candidate: (i: number) => boolean,
  budget: number,
): number | undefined {
  for (let i = Math.min(ceiling, layers.length - 1); i >= 0; i--) {
    if (candidate(i) && (layers[i] as LayerState).rate <= budget) return i;
  }
  return undefined;
}
