import type { VideoWantsData } from '@realtime/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ADAPT_SETTLE_MS, type AdaptiveEnv, AdaptiveVideo, type ElementWatcher } from './adaptive-video.js';

/** An observer of the fake page: the test calls `fire` as the browser would call back. */
class FakeObserver<E> implements ElementWatcher {
  readonly watched = new Set<Element>();
  disconnected = false;
  constructor(readonly fire: (entries: readonly E[]) => void) {}
  observe(target: Element): void {
    this.watched.add(target);
  }
  unobserve(target: Element): void {
    this.watched.delete(target);
  }
  disconnect(): void {
    this.disconnected = true;
    this.watched.clear();
  }
}

type SizeEntry = { target: Element; contentRect: { width: number; height: number } };
type ViewEntry = { target: Element; isIntersecting: boolean };

/** A page with fake observers and document; timers are vitest's fake ones. */
function fakePage(ratio = 1) {
  const sizes: FakeObserver<SizeEntry>[] = [];
  const views: FakeObserver<ViewEntry>[] = [];
  const listeners = new Set<() => void>();
  const document = {
    visibilityState: 'visible' as DocumentVisibilityState,
    addEventListener: (_type: string, listener: () => void) => listeners.add(listener),
    removeEventListener: (_type: string, listener: () => void) => listeners.delete(listener),
  };
  const env: AdaptiveEnv = {
    ResizeObserver: class extends FakeObserver<SizeEntry> {
      constructor(fire: (entries: readonly SizeEntry[]) => void) {
        super(fire);
        sizes.push(this);
      }
    },
    IntersectionObserver: class extends FakeObserver<ViewEntry> {
      constructor(fire: (entries: readonly ViewEntry[]) => void) {
        super(fire);
        views.push(this);
      }
    },
    document: document as unknown as AdaptiveEnv['document'] & object,
    pixelRatio: () => ratio,
    setTimeout: (run, ms) => setTimeout(run, ms),
    clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
  };
  return {
    env,
    listeners,
    resize: (target: Element, width: number, height: number) =>
      sizes[0]?.fire([{ target, contentRect: { width, height } }]),
    view: (target: Element, isIntersecting: boolean) => views[0]?.fire([{ target, isIntersecting }]),
    hideTab: (hidden: boolean) => {
      document.visibilityState = hidden ? 'hidden' : 'visible';
      for (const listener of listeners) listener();
    },
    sizes,
    views,
  };
}

const element = (name: string) => ({ name }) as unknown as Element;

/** An AdaptiveVideo whose unit session is `open` (sends land in `sent`). */
function adaptive(env: AdaptiveEnv) {
  const sent: VideoWantsData[] = [];
  const session = { open: true };
  const video = new AdaptiveVideo(
    (wants) => {
      if (!session.open) return false;
      sent.push(wants);
      return true;
    },
    () => env,
  );
  return { video, sent, session };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('wants set by hand', () => {
  it('sends each change at once, only on change; rounds sizes up and bounds them', () => {
    const { video, sent } = adaptive(fakePage().env);
    video.setSize(639.2, 360);
    video.setSize(640, 360);
    video.pause();
    video.pause();
    video.resume();
    video.setSize(100_000);
    video.setSize();
    expect(sent).toEqual([
      { maxWidth: 640, maxHeight: 360 },
      { maxWidth: 640, maxHeight: 360, paused: true },
      { maxWidth: 640, maxHeight: 360 },
      { maxWidth: 16_384 },
      {},
    ]);
  });

  it('refuses a size that is not a positive number', () => {
    const { video, sent } = adaptive(fakePage().env);
    expect(() => video.setSize(0, 10)).toThrow(RangeError);
    expect(() => video.setSize(10, Number.NaN)).toThrow('the video height must be a positive number of pixels');
    expect(sent).toEqual([]);
  });

  it('kept while there is no session, and sent again to each new session (a restart, a new run)', () => {
    const { video, sent, session } = adaptive(fakePage().env);
    session.open = false;
    video.setSize(320, 180);
    expect(sent).toEqual([]);
    session.open = true;
    video.resend();
    video.resend();
    expect(sent).toEqual([
      { maxWidth: 320, maxHeight: 180 },
      { maxWidth: 320, maxHeight: 180 },
    ]);
    // Nothing asked: a new session is told nothing.
    const other = adaptive(fakePage().env);
    other.video.resend();
    expect(other.sent).toEqual([]);
  });
});

describe('an attached element', () => {
  it('sends its size times devicePixelRatio once it settles, only when it changed', async () => {
    const page = fakePage(2);
    const { video, sent } = adaptive(page.env);
    const el = element('v');
    video.attach(el);
    expect(page.sizes[0]?.watched.has(el)).toBe(true);
    expect(page.views[0]?.watched.has(el)).toBe(true);
    page.view(el, true);
    page.resize(el, 300, 150);
    page.resize(el, 320.4, 180);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS - 1);
    expect(sent).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toEqual([{ maxWidth: 641, maxHeight: 360 }]);
    // The same size again: nothing new to tell.
    page.resize(el, 320.4, 180);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    expect(sent).toHaveLength(1);
  });

  it('pauses when off screen, zero-sized or the tab hidden (once settled); resumes at once', async () => {
    const page = fakePage();
    const { video, sent } = adaptive(page.env);
    const el = element('v');
    video.attach(el);
    page.resize(el, 640, 360);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    page.view(el, false);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    // Scrolled back while the tab is hidden: still paused, nothing to tell.
    page.hideTab(true);
    page.view(el, true);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    expect(sent).toHaveLength(2);
    page.hideTab(false); // at once
    expect(sent).toHaveLength(3);
    page.resize(el, 0, 0); // display: none
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    page.resize(el, 640, 360);
    const size = { maxWidth: 640, maxHeight: 360 };
    expect(sent).toEqual([size, { paused: true }, size, { paused: true }, size]);
    expect(video.wants).toEqual({ maxWidth: 640, maxHeight: 360 });
  });

  it('a short hide settles into nothing sent', async () => {
    const page = fakePage();
    const { video, sent } = adaptive(page.env);
    const el = element('v');
    video.attach(el);
    page.resize(el, 640, 360);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    page.view(el, false);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS / 2);
    page.view(el, true);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    expect(sent).toEqual([{ maxWidth: 640, maxHeight: 360 }]);
  });

  it('several elements: the largest visible one; detaching the last brings back the wants set by hand', async () => {
    const page = fakePage();
    const { video, sent } = adaptive(page.env);
    video.setSize(100, 100);
    const small = element('small');
    const large = element('large');
    video.attach(small);
    const detachLarge = video.attach(large);
    expect(page.listeners.size).toBe(1);
    page.resize(small, 160, 90);
    page.resize(large, 1280, 720);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    page.view(large, false);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    detachLarge();
    expect(page.sizes[0]?.watched.has(large)).toBe(false);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    video.attach(small)(); // attached twice: one watch, whose detach ends it
    expect(page.listeners.size).toBe(0);
    expect(sent).toEqual([
      { maxWidth: 100, maxHeight: 100 },
      { maxWidth: 1280, maxHeight: 720 },
      { maxWidth: 160, maxHeight: 90 },
      { maxWidth: 100, maxHeight: 100 },
    ]);
  });

  it('after a new session the element’s wants are sent again; after close nothing is', async () => {
    const page = fakePage();
    const { video, sent } = adaptive(page.env);
    const el = element('v');
    video.attach(el);
    page.resize(el, 640, 360);
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    video.resend();
    expect(sent).toEqual([
      { maxWidth: 640, maxHeight: 360 },
      { maxWidth: 640, maxHeight: 360 },
    ]);
    page.resize(el, 320, 180);
    video.close();
    await vi.advanceTimersByTimeAsync(ADAPT_SETTLE_MS);
    video.resend();
    expect(sent).toHaveLength(2);
    expect(page.sizes[0]?.disconnected).toBe(true);
    expect(page.listeners.size).toBe(0);
  });

  it('without ResizeObserver or IntersectionObserver: the size the element has when attached', () => {
    const { video, sent } = adaptive({
      pixelRatio: () => 1.5,
      setTimeout: (run, ms) => setTimeout(run, ms),
      clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
    });
    video.attach({ clientWidth: 200, clientHeight: 100 } as unknown as Element);
    vi.advanceTimersByTime(ADAPT_SETTLE_MS);
    expect(sent).toEqual([{ maxWidth: 300, maxHeight: 150 }]);
  });
});
