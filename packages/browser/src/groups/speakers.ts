/**
 * Who is speaking in a group call, from audio levels sampled a few times a second: pure, with the
 * time given by the caller (tests run it on made-up clocks).
 *
 * A level is linear, 0 (silence) to 1 (full scale), as WebRTC gives it: the RTP audio level header
 * extension says -dBov, and `10 ** (-dBov / 20)` is the level. A participant's smoothed level is the
 * mean of its samples over the last {@link SpeakerOptions.windowMs}: speech comes in syllables and
 * a sample is one moment of it (Chromium's fake microphone beeps 20 ms in 500), so a single sample
 * neither makes nor ends a speaker. A participant becomes a speaker once that mean reaches
 * `startLevel` and stays one until it falls below the lower `stopLevel` (hysteresis: a speaker
 * hovering at the threshold does not flicker in and out).
 */

/** One participant speaking and its smoothed level, 0..1. */
export interface SpeakerLevel {
  readonly id: string;
  readonly level: number;
}

export interface SpeakerOptions {
  /** The samples a participant's level is the mean of: the last this many ms. Default 1500. */
  windowMs?: number;
  /** A participant starts speaking when its mean level reaches this. Default 0.01 (-40 dBov). */
  startLevel?: number;
  /** A speaker stops speaking when its mean level falls below this. Default 0.005 (-46 dBov). */
  stopLevel?: number;
  /**
   * Two speakers swap places only when the one behind is louder than the one ahead by this factor
   * (default 1.25, about 2 dB): two voices as loud as each other do not swap on every sample.
   */
  orderMargin?: number;
}

export const SPEAKER_WINDOW_MS = 1500;
export const SPEAKER_START_LEVEL = 0.01;
export const SPEAKER_STOP_LEVEL = 0.005;
export const SPEAKER_ORDER_MARGIN = 1.25;

interface Track {
  /** Samples in time order: [ms, level]. */
  samples: [number, number][];
  speaking: boolean;
}

/**
 * The speakers of a group call, loudest first.
 *
 * @example
 * const speakers = new Speakers();
 * speakers.feed('page-a', 0.3, now);
 * const changed = speakers.update(now); // the ordered list when it differs from the last one, else undefined
 */
export class Speakers {
  readonly #windowMs: number;
  readonly #start: number;
  readonly #stop: number;
  readonly #margin: number;
  readonly #tracks = new Map<string, Track>();
  /** The list {@link Speakers.update} gave last. */
  #last: SpeakerLevel[] = [];

  constructor(options: SpeakerOptions = {}) {
    this.#windowMs = options.windowMs ?? SPEAKER_WINDOW_MS;
    this.#start = options.startLevel ?? SPEAKER_START_LEVEL;
    this.#stop = Math.min(options.stopLevel ?? SPEAKER_STOP_LEVEL, this.#start);
    this.#margin = Math.max(1, options.orderMargin ?? SPEAKER_ORDER_MARGIN);
  }

  /** A sample of `id`'s level (0..1; anything else counts as silence) at `nowMs`. */
  feed(id: string, level: number, nowMs: number): void {
    let track = this.#tracks.get(id);
    if (!track) {
      track = { samples: [], speaking: false };
      this.#tracks.set(id, track);
    }
    const clean = Number.isFinite(level) ? Math.min(1, Math.max(0, level)) : 0;
    const lastAt = track.samples.at(-1)?.[0];
    // A clock that went back: the sample is taken as now, not before the ones already there.
    const at = lastAt !== undefined && nowMs < lastAt ? lastAt : nowMs;
    track.samples.push([at, clean]);
    this.#trim(track, at);
  }

  /** `id` is gone (left the call): it speaks no more, from the next {@link Speakers.update}. */
  remove(id: string): void {
    this.#tracks.delete(id);
  }

  /** The speakers as the last {@link Speakers.update} found them, loudest first. */
  get current(): readonly SpeakerLevel[] {
    return this.#last;
  }

  /**
   * Weighs the samples up to `nowMs`: the speakers loudest first when who speaks, or their order,
   * changed since the last call; else undefined (levels alone moving is no change).
   */
  update(nowMs: number): SpeakerLevel[] | undefined {
    const levels = new Map<string, number>();
    for (const [id, track] of this.#tracks) {
      this.#trim(track, nowMs);
      if (track.samples.length === 0) {
        // Nothing heard of it for a whole window (its media stopped): silent, and forgotten.
        this.#tracks.delete(id);
        continue;
      }
      const mean = track.samples.reduce((sum, [, level]) => sum + level, 0) / track.samples.length;
      track.speaking = mean >= (track.speaking ? this.#stop : this.#start);
      if (track.speaking) levels.set(id, mean);
    }
    const next = this.#order(levels);
    const same = next.length === this.#last.length && next.every((s, i) => s.id === this.#last[i]?.id);
    this.#last = next;
    return same ? undefined : next;
  }

  /** Drops the samples older than the window ending at `nowMs`. */
  #trim(track: Track, nowMs: number): void {
    const from = nowMs - this.#windowMs;
    while (track.samples.length > 0 && (track.samples[0]?.[0] ?? 0) <= from) track.samples.shift();
  }

  /**
   * Loudest first, except that two speakers whose levels are within the margin keep the order they
   * had (a newcomer goes by its level): at each place, of the speakers no other is clearly louder
   * than, the one that was ahead before.
   */
  #order(levels: Map<string, number>): SpeakerLevel[] {
    const rank = new Map(this.#last.map((s, i) => [s.id, i]));
    const left = [...levels].map(([id, level]) => ({ id, level }));
    const out: SpeakerLevel[] = [];
    while (left.length > 0) {
      let best = -1;
      for (let i = 0; i < left.length; i++) {
        const candidate = left[i] as SpeakerLevel;
        if (left.some((other) => other.level > candidate.level * this.#margin)) continue;
        if (best < 0 || this.#before(candidate, left[best] as SpeakerLevel, rank)) best = i;
      }
      // A margin of 1 or more leaves the loudest undominated: best is found.
      out.push(...left.splice(best, 1));
    }
    return out;
  }

  /** `a` goes before `b` (neither clearly louder): the one ahead last time, else the louder, else by id. */
  #before(a: SpeakerLevel, b: SpeakerLevel, rank: Map<string, number>): boolean {
    const ra = rank.get(a.id);
    const rb = rank.get(b.id);
    if (ra !== undefined && rb !== undefined) return ra < rb;
    if (ra !== undefined || rb !== undefined) return ra !== undefined;
    if (a.level !== b.level) return a.level > b.level;
    return a.id < b.id;
  }
}
