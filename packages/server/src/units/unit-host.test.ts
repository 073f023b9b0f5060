/**
 * UnitHost over fake units (no WebRTC): what it counts against the node's budget when making a
 * session fails, that its close leaves no unit made after it, and that its units share the pages'
 * links.
 */
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { IceSettings } from './ice-settings.js';
import { PageLinks } from './page-link.js';
import {
  type IceCandidateInit,
  type PresenterSession,
  SessionClosedError,
  type SessionEnd,
  type ViewerSession,
} from './peer-sessions.js';
import { type MediaUnit, UnitHost } from './unit-host.js';
import type { VideoWants } from './video-wants.js';

const log = pino({ level: 'silent' });
const events = { connected: () => undefined, failed: () => undefined };

/** A session of a fake unit: it connects when told, and its description waits for `release` when gated. */
class FakeSession implements PresenterSession, ViewerSession {
  readonly #ended: ((reason: SessionEnd) => void)[] = [];
  readonly #connected: (() => void)[] = [];
  #gate: { promise: Promise<void>; open: () => void } | undefined;
  #cancel: ((error: Error) => void) | undefined;
  closed = false;

  constructor(
    readonly id: string,
    gated: boolean,
  ) {
    if (gated) {
      let open = () => {};
      const promise = new Promise<void>((resolve) => {
        open = resolve;
      });
      this.#gate = { promise, open };
    }
  }

  release(): void {
    this.#gate?.open();
  }

  connect(): void {
    for (const listener of this.#connected.splice(0)) listener();
  }

  answer(): Promise<string> {
    return this.#describe('answer');
  }

  offer(): Promise<string> {
    return this.#describe('offer');
  }

  async #describe(sdp: string): Promise<string> {
    if (this.closed) throw new SessionClosedError();
    // As a real session: an end while the description is made fails it with SessionClosedError.
    const cancelled = new Promise<never>((_, reject) => {
      this.#cancel = reject;
    });
    await Promise.race([this.#gate?.promise, cancelled]);
    return sdp;
  }

  async accept(): Promise<void> {}
  async addCandidate(_candidate: IceCandidateInit): Promise<void> {}

  onEnded(listener: (reason: SessionEnd) => void): void {
    if (!this.closed) this.#ended.push(listener);
  }

  onConnected(listener: () => void): void {
    this.#connected.push(listener);
  }

  close(): Promise<void> {
    return this.end('closed');
  }

  async end(reason: SessionEnd): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.#cancel?.(new SessionClosedError());
    for (const listener of this.#ended.splice(0)) listener(reason);
  }
}

/** Fake units, made through the host's factory; `fail` makes the next presenter or viewer throw once. */
class FakeUnits {
  readonly made: FakeUnit[] = [];
  /** The pages' links each unit was made with. */
  readonly pages: PageLinks[] = [];
  fail: 'presenter' | 'viewer' | undefined;
  gated = false;

  readonly newUnit = (_media: IceSettings, pages: PageLinks): MediaUnit => {
    const unit = new FakeUnit(this);
    this.made.push(unit);
    this.pages.push(pages);
    return unit;
  };
}

class FakeUnit implements MediaUnit {
  readonly sessions: FakeSession[] = [];
  /** What setViewerVideo was told, in order. */
  readonly video: [string, VideoWants][] = [];
  closed = false;

  constructor(readonly units: FakeUnits) {}

  get presenter(): FakeSession {
    const first = this.sessions[0];
    if (!first) throw new Error('no presenter');
    return first;
  }

  createPresenter(id: string): PresenterSession {
    return this.#session(id, 'presenter');
  }

  createViewer(id: string): ViewerSession {
    return this.#session(id, 'viewer');
  }

  #session(id: string, kind: 'presenter' | 'viewer'): FakeSession {
    if (this.units.fail === kind) {
      this.units.fail = undefined;
      throw new Error(`the ${kind} could not be made`);
    }
    const session = new FakeSession(id, this.units.gated);
    this.sessions.push(session);
    return session;
  }

  /** Dynacast's listener, as the host set it. */
  sendLayers: ((count: number) => void) | undefined;

  onSendLayers(listener: (count: number) => void): void {
    this.sendLayers = listener;
  }

  setViewerVideo(id: string, wants: VideoWants): boolean {
    this.video.push([id, wants]);
    return this.sessions.some((s) => s.id === id && !s.closed);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.sessions.map((s) => s.end('unit-closed')));
  }
}

function host(units: FakeUnits, limits = { unitsPerPage: 1, unitsPerApp: 10 }): UnitHost {
  return new UnitHost({
    media: { hostAddresses: ['127.0.0.1'], portRange: [40000, 40015] },
    connectTimeoutMs: 60_000,
    limits,
    log,
    newUnit: units.newUnit,
  });
}

describe("a unit host's pages' links", () => {
  it('makes every unit of the host with the same pages links, and another host with its own', async () => {
    const units = new FakeUnits();
    const hosted = host(units);
    await hosted.present('k1', { app: 'a', page: 'p1' }, 'offer', events);
    await hosted.present('k2', { app: 'a', page: 'p2' }, 'offer', events);
    const [first, second] = units.pages;
    expect(units.pages).toHaveLength(2);
    // A page receiving both units' video shares one link between its two sessions.
    expect(second).toBe(first);
    const others = new FakeUnits();
    const other = host(others);
    await other.present('k1', { app: 'a', page: 'p1' }, 'offer', events);
    expect(others.pages[0]).toBeInstanceOf(PageLinks);
    expect(others.pages[0]).not.toBe(first);
    await hosted.close();
    await other.close();
  });
});

describe('a unit host whose session cannot be made', () => {
  it('gives back the unit it counted when the presenter cannot be made', async () => {
    const units = new FakeUnits();
    const hosted = host(units);
    units.fail = 'presenter';
    await expect(hosted.present('k1', { app: 'a', page: 'p' }, 'offer', events)).rejects.toThrow('could not be made');
    expect(hosted.size).toEqual({ units: 0, viewers: 0, sessions: 0 });
    // One unit per page: the failed one no longer counts, so the page may have this one.
    expect(await hosted.present('k2', { app: 'a', page: 'p' }, 'offer', events)).toBe('answer');
    expect(hosted.size).toEqual({ units: 1, viewers: 0, sessions: 1 });
    await hosted.close();
  });

  it('gives back the session it counted when the viewer cannot be made', async () => {
    const units = new FakeUnits();
    const hosted = host(units);
    expect(await hosted.present('k', { app: 'a', page: 'p' }, 'offer', events)).toBe('answer');
    units.made[0]?.presenter.connect();
    units.fail = 'viewer';
    await expect(hosted.openViewer('k', 'v', false)).rejects.toThrow('could not be made');
    expect(hosted.size).toEqual({ units: 1, viewers: 0, sessions: 1 });
    expect(await hosted.openViewer('k', 'v', false)).toBe('offer');
    expect(hosted.size).toEqual({ units: 1, viewers: 1, sessions: 2 });
    await hosted.close();
    expect(hosted.size).toEqual({ units: 0, viewers: 0, sessions: 0 });
  });
});

describe('dynacast through the host', () => {
  it('passes the layers the unit wants sent to whoever started it, and nothing of a unit it replaced', async () => {
    const units = new FakeUnits();
    const hosted = host(units);
    const first: number[] = [];
    const second: number[] = [];
    await hosted.present('k', { app: 'a', page: 'p' }, 'offer', { ...events, sendLayers: (n) => first.push(n) });
    units.made[0]?.sendLayers?.(1);
    expect(first).toEqual([1]);
    // A new offer of the page: a new unit, and the old one's word no longer goes anywhere.
    await hosted.present('k', { app: 'a', page: 'p' }, 'offer', { ...events, sendLayers: (n) => second.push(n) });
    units.made[0]?.sendLayers?.(2);
    units.made[1]?.sendLayers?.(3);
    expect(first).toEqual([1]);
    expect(second).toEqual([3]);
    await hosted.close();
  });
});

describe('closing a unit host', () => {
  it('waits for the offers in flight and makes no unit after it', async () => {
    const units = new FakeUnits();
    const hosted = host(units, { unitsPerPage: 4, unitsPerApp: 10 });
    units.gated = true;
    // An offer being answered, and a second offer of the same key waiting its turn behind it.
    const first = hosted.present('k', { app: 'a', page: 'p' }, 'offer 1', events);
    const second = hosted.present('k', { app: 'a', page: 'p' }, 'offer 2', events);
    await new Promise((resolve) => setImmediate(resolve));
    expect(units.made).toHaveLength(1);
    await hosted.close();
    // Anything still being described may finish now: close() is over.
    units.gated = false;
    await new Promise((resolve) => setImmediate(resolve));
    for (const unit of units.made) for (const session of unit.sessions) session.release();
    // The first offer's session ended with the host, and the second found it closed: nobody gets an answer.
    expect(await first).toBeUndefined();
    expect(await second).toBeUndefined();
    expect(units.made).toHaveLength(1);
    expect(units.made.every((unit) => unit.closed)).toBe(true);
    expect(hosted.size).toEqual({ units: 0, viewers: 0, sessions: 0 });
    // And after: an offer or a viewer is refused quietly (nothing to answer).
    expect(await hosted.present('k2', { app: 'a', page: 'p' }, 'offer 3', events)).toBeUndefined();
    expect(units.made).toHaveLength(1);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits at most 10 s for a step that hangs (a store read); the step makes nothing when it ends later', async () => {
    vi.useFakeTimers();
    const units = new FakeUnits();
    let answer: (several: boolean) => void = () => {};
    const read = new Promise<boolean>((resolve) => {
      answer = resolve;
    });
    const hosted = new UnitHost({
      media: { hostAddresses: ['127.0.0.1'], portRange: [40000, 40015] },
      connectTimeoutMs: 60_000,
      log,
      newUnit: units.newUnit,
      severalApps: () => read,
    });
    const offer = hosted.present('k', { app: 'a', page: 'p' }, 'offer', events);
    let closed = false;
    const closing = hosted.close().then(() => {
      closed = true;
    });
    await vi.advanceTimersByTimeAsync(9_999);
    expect(closed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await closing;
    answer(true);
    expect(await offer).toBeUndefined();
    expect(units.made).toHaveLength(0);
  });
});

describe('what receiving pages ask of the video (adaptive stream)', () => {
  it('goes to the page’s session now, and the last one asked to its later sessions on that unit', async () => {
    const units = new FakeUnits();
    const hosted = host(units);
    // No unit here yet: nothing to tell, nothing kept.
    hosted.viewerVideo('k', 'v', { paused: true });
    expect(await hosted.present('k', { app: 'a', page: 'p' }, 'offer', events)).toBe('answer');
    const unit = units.made[0] as FakeUnit;
    // Asked before its session opens: kept, not told (no session).
    hosted.viewerVideo('k', 'v', { maxWidth: 320, maxHeight: 180 });
    expect(unit.video).toEqual([]);
    unit.presenter.connect();
    expect(await hosted.openViewer('k', 'v', false)).toBe('offer');
    expect(unit.video).toEqual([['v', { maxWidth: 320, maxHeight: 180 }]]);
    hosted.viewerVideo('k', 'v', { maxWidth: 640, maxHeight: 360 });
    hosted.viewerVideo('k', 'v', { maxWidth: 640, maxHeight: 360, paused: true });
    expect(unit.video.slice(1)).toEqual([
      ['v', { maxWidth: 640, maxHeight: 360 }],
      ['v', { maxWidth: 640, maxHeight: 360, paused: true }],
    ]);
    // A restart makes a new session: it gets the last wants as it is made.
    expect(await hosted.openViewer('k', 'v', true)).toBe('offer');
    expect(unit.video.slice(3)).toEqual([['v', { maxWidth: 640, maxHeight: 360, paused: true }]]);
    // Another page's session gets nothing of this one's.
    expect(await hosted.openViewer('k', 'w', false)).toBe('offer');
    expect(unit.video).toHaveLength(4);
    await hosted.close();
  });

  it('forgets a page’s wants when its session is closed (it left), and a new unit starts with none', async () => {
    const units = new FakeUnits();
    const hosted = host(units, { unitsPerPage: 2, unitsPerApp: 10 });
    await hosted.present('k', { app: 'a', page: 'p' }, 'offer', events);
    const first = units.made[0] as FakeUnit;
    first.presenter.connect();
    await hosted.openViewer('k', 'v', false);
    hosted.viewerVideo('k', 'v', { paused: true });
    await hosted.closeViewer('k', 'v');
    await hosted.openViewer('k', 'v', false);
    expect(first.video).toEqual([['v', { paused: true }]]);
    // The sender offers anew: a new unit, whose sessions start with nothing asked.
    hosted.viewerVideo('k', 'v', { maxWidth: 100 });
    await hosted.present('k', { app: 'a', page: 'p' }, 'offer 2', events);
    const second = units.made[1] as FakeUnit;
    second.presenter.connect();
    await hosted.openViewer('k', 'v', false);
    expect(second.video).toEqual([]);
    await hosted.close();
  });
});
