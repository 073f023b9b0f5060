import { VIDEO_SIZE_MAX, type VideoWantsData } from '@realtime/protocol';

/**
 * How long size and visibility changes of watched elements settle before the unit is told: a window
 * being resized or a page scrolled tells it once, not at every frame. Showing video again is told at
 * once (the viewer is looking).
 */
export const ADAPT_SETTLE_MS = 150;

/** The wants of a session nobody asked anything of. */
const NOTHING = '{}';

/** What {@link AdaptiveVideo} watches with: the browser's observers by default, fakes in tests. */
export interface AdaptiveEnv {
  /** Absent: an element's size is read once, when attached. */
  ResizeObserver?: new (
    callback: (entries: readonly { target: Element; contentRect: { width: number; height: number } }[]) => void,
  ) => ElementWatcher;
  /** Absent: an attached element counts as on screen. */
  IntersectionObserver?: new (
    callback: (entries: readonly { target: Element; isIntersecting: boolean }[]) => void,
  ) => ElementWatcher;
  /** Absent: the page counts as visible. */
  document?: Pick<Document, 'visibilityState' | 'addEventListener' | 'removeEventListener'>;
  /** Device pixels per CSS pixel (`devicePixelRatio`). */
  pixelRatio(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

export interface ElementWatcher {
  observe(target: Element): void;
  unobserve(target: Element): void;
  disconnect(): void;
}

/** The page's own: whatever of ResizeObserver, IntersectionObserver and document it has. */
export function browserEnv(): AdaptiveEnv {
  const g = globalThis as {
    ResizeObserver?: AdaptiveEnv['ResizeObserver'];
    IntersectionObserver?: AdaptiveEnv['IntersectionObserver'];
    document?: AdaptiveEnv['document'];
    devicePixelRatio?: number;
  };
  const env: AdaptiveEnv = {
    pixelRatio: () => (typeof g.devicePixelRatio === 'number' && g.devicePixelRatio > 0 ? g.devicePixelRatio : 1),
    setTimeout: (run, ms) => setTimeout(run, ms),
    clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
  };
  if (typeof g.ResizeObserver === 'function') env.ResizeObserver = g.ResizeObserver;
  if (typeof g.IntersectionObserver === 'function') env.IntersectionObserver = g.IntersectionObserver;
  if (g.document !== undefined) env.document = g.document;
  return env;
}

/** A watched element: its last size (CSS px) and whether it is on screen. */
interface Watched {
  width: number;
  height: number;
  sized: boolean;
  inView: boolean;
}

/**
 * What this page asks of one video a forwarding unit sends it (adaptive stream, docs/calls.md): a
 * size the page sets ({@link AdaptiveVideo.setSize}, {@link AdaptiveVideo.pause}), or, while
 * elements are attached, what they show: the largest visible one's size in device pixels, or paused
 * when none is visible (off screen, zero-sized, or the tab hidden). `send` carries `{ video }` to the
 * unit and says whether it could (a session there); {@link AdaptiveVideo.resend} tells a new session.
 */
export class AdaptiveVideo {
  readonly #send: (wants: VideoWantsData) => boolean;
  readonly #envOf: () => AdaptiveEnv;
  #env: AdaptiveEnv | undefined;
  /** What the page set by hand; in force while no element is attached. */
  #manual: VideoWantsData = {};
  readonly #elements = new Map<Element, Watched>();
  #sizes: ElementWatcher | undefined;
  #views: ElementWatcher | undefined;
  #timer: unknown;
  /** The wants the unit's session has, as JSON (a new session has none: no bound, not paused). */
  #told = NOTHING;
  /** The wants last sent (or meant to be): a change is against these. */
  #last: VideoWantsData = {};
  #closed = false;
  readonly #visibility = (): void => this.#changed();

  constructor(send: (wants: VideoWantsData) => boolean, env: () => AdaptiveEnv = browserEnv) {
    this.#send = send;
    this.#envOf = env;
  }

  /** The wants in force (what the unit has, or gets at its next session). */
  get wants(): VideoWantsData {
    return { ...this.#current() };
  }

  /**
   * At most this size (device pixels; rounded up, at most 16384): the unit sends no larger layer. No
   * argument (or undefined) lifts the bound on that side. Throws a RangeError for a size that is not
   * a positive number.
   */
  setSize(width?: number, height?: number): void {
    const manual: VideoWantsData = {};
    if (width !== undefined) manual.maxWidth = sizeOf(width, 'width');
    if (height !== undefined) manual.maxHeight = sizeOf(height, 'height');
    if (this.#manual.paused) manual.paused = true;
    this.#manual = manual;
    this.#tell();
  }

  /** No video until {@link AdaptiveVideo.resume} (the audio goes on). */
  pause(): void {
    this.#manual = { ...this.#manual, paused: true };
    this.#tell();
  }

  resume(): void {
    const { paused: _, ...rest } = this.#manual;
    this.#manual = rest;
    this.#tell();
  }

  /**
   * Watches the element the video is shown in: its size (ResizeObserver, times devicePixelRatio) and
   * whether it is on screen (IntersectionObserver) and the page visible (`visibilitychange`). Returns
   * a function that stops watching it; with no element left, the wants set by hand are in force again.
   */
  attach(element: Element): () => void {
    if (this.#closed) return () => {};
    if (this.#elements.has(element)) return () => this.#detach(element);
    const env = this.#environment();
    const watched: Watched = { width: 0, height: 0, sized: false, inView: true };
    this.#elements.set(element, watched);
    if (this.#elements.size === 1) env.document?.addEventListener('visibilitychange', this.#visibility);
    if (env.ResizeObserver) {
      this.#sizes ??= new env.ResizeObserver((entries) => {
        for (const entry of entries) {
          const known = this.#elements.get(entry.target);
          if (!known) continue;
          known.width = entry.contentRect.width;
          known.height = entry.contentRect.height;
          known.sized = true;
        }
        this.#changed();
      });
      this.#sizes.observe(element);
    } else {
      // No ResizeObserver: the size it has now.
      watched.width = (element as { clientWidth?: number }).clientWidth ?? 0;
      watched.height = (element as { clientHeight?: number }).clientHeight ?? 0;
      watched.sized = true;
      this.#changed();
    }
    if (env.IntersectionObserver) {
      this.#views ??= new env.IntersectionObserver((entries) => {
        for (const entry of entries) {
          const known = this.#elements.get(entry.target);
          if (known) known.inView = entry.isIntersecting;
        }
        this.#changed();
      });
      this.#views.observe(element);
    }
    return () => this.#detach(element);
  }

  /** The unit made a new session for this page (an offer): it has nothing from this page yet. */
  resend(): void {
    this.#told = NOTHING;
    this.#flush();
  }

  /** Stops watching every element; nothing is sent after. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#cancel();
    this.#sizes?.disconnect();
    this.#views?.disconnect();
    if (this.#elements.size > 0) this.#env?.document?.removeEventListener('visibilitychange', this.#visibility);
    this.#elements.clear();
  }

  #detach(element: Element): void {
    if (!this.#elements.delete(element)) return;
    this.#sizes?.unobserve(element);
    this.#views?.unobserve(element);
    if (this.#elements.size === 0) {
      this.#env?.document?.removeEventListener('visibilitychange', this.#visibility);
      // Back to what the page set by hand, now.
      this.#cancel();
      this.#flush();
      return;
    }
    this.#changed();
  }

  /** The page set its wants by hand: told now when they are in force (no element attached). */
  #tell(): void {
    if (this.#elements.size === 0) this.#flush();
  }

  /** An element or the page's visibility changed: told once it settles, or now when video shows again. */
  #changed(): void {
    if (this.#closed) return;
    const wants = this.#current();
    if (this.#last.paused && !wants.paused) {
      this.#cancel();
      this.#flush();
      return;
    }
    this.#cancel();
    const env = this.#environment();
    this.#timer = env.setTimeout(() => {
      this.#timer = undefined;
      this.#flush();
    }, ADAPT_SETTLE_MS);
  }

  /** Sends the wants in force when the unit's session does not have them yet. */
  #flush(): void {
    if (this.#closed) return;
    const wants = this.#current();
    this.#last = wants;
    const text = JSON.stringify(wants);
    if (text === this.#told) return;
    if (this.#send({ ...wants })) this.#told = text;
  }

  /** What is asked now: by the attached elements when there are any (unknown yet: as last asked), else by hand. */
  #current(): VideoWantsData {
    if (this.#elements.size === 0) return this.#manual;
    const env = this.#environment();
    const hidden = env.document?.visibilityState === 'hidden';
    const sized = [...this.#elements.values()].filter((w) => w.sized);
    if (sized.length === 0 && !hidden) return this.#last;
    const shown = hidden ? [] : sized.filter((w) => w.inView && w.width > 0 && w.height > 0);
    if (shown.length === 0) return { paused: true };
    const ratio = env.pixelRatio();
    return {
      maxWidth: clampSize(Math.max(...shown.map((w) => w.width)) * ratio),
      maxHeight: clampSize(Math.max(...shown.map((w) => w.height)) * ratio),
    };
  }

  #environment(): AdaptiveEnv {
    this.#env ??= this.#envOf();
    return this.#env;
  }

  #cancel(): void {
    if (this.#timer === undefined) return;
    this.#environment().clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function sizeOf(value: number, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`the video ${what} must be a positive number of pixels`);
  }
  return clampSize(value);
}

/** Whole device pixels, rounded up, from 1 to VIDEO_SIZE_MAX. */
function clampSize(px: number): number {
  return Math.min(VIDEO_SIZE_MAX, Math.max(1, Math.ceil(px)));
}
