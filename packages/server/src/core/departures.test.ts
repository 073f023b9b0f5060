import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryPresenceStore } from '../engines/memory/presence.js';
import { StoreError } from '../engines/store-error.js';
import type { Broker, Outgoing, PresenceStore } from '../engines/types.js';
import { type DepartureOptions, Departures } from './departures.js';
import type { AppEvent } from './events.js';

const T0 = 1_700_000_000_000;
const log = pino({ level: 'silent' });

/** A presence store whose every call fails while `down` is true (as Redis stopped). */
function flaky(store: PresenceStore): { store: PresenceStore; down: { on: boolean }; calls: string[] } {
  const down = { on: false };
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        if (down.on) throw new StoreError('unavailable');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, down, calls };
}

/** An event sink that refuses while `down` is true; what it took, in order. */
function sink(): { record(app: string, event: AppEvent): Promise<void>; down: { on: boolean }; taken: AppEvent[] } {
  const down = { on: false };
  const taken: AppEvent[] = [];
  return {
    down,
    taken,
    record: async (_app, event) => {
      if (down.on) throw new StoreError('unavailable');
      taken.push(event);
    },
  };
}

function broker(): { broker: Broker; sent: Outgoing[] } {
  const sent: Outgoing[] = [];
  return {
    sent,
    broker: {
      publish: (events: readonly Outgoing[]) => {
        sent.push(...events);
        return events.map(() => undefined);
      },
    } as unknown as Broker,
  };
}

function departures(
  presence: PresenceStore,
  events: Pick<ReturnType<typeof sink>, 'record'>,
  held: Set<string>,
  options: Partial<DepartureOptions> = {},
) {
  const out = broker();
  const made = new Departures({
    node: 'na',
    presence,
    broker: out.broker,
    events,
    log,
    now: () => T0,
    holds: (page) => held.has(page),
    options: { retryMs: 100, retryMaxMs: 400, reconcileMs: 60_000, ...options },
  });
  return { departures: made, sent: out.sent };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Departures', () => {
  it('closes a page whose close failed once the store answers, with backoff, and reports what it ended once', async () => {
    vi.useFakeTimers();
    const memory = new MemoryPresenceStore({ offlineDelayMs: 10 });
    const { store, down, calls } = flaky(memory);
    const events = sink();
    const { departures: d, sent } = departures(store, events, new Set());
    memory.pageOpened('app', 'ann', 'na.1');
    memory.enterRoom('app', 'lobby', 'na.1');
    memory.joinRoom('app', 'lobby', { user: 'ann' }, 'na.1');

    down.on = true;
    d.closeLater('na.1');
    // Tried at 100 ms, then 200 ms later, then 400 ms (the cap) apart.
    await vi.advanceTimersByTimeAsync(100);
    await vi.advanceTimersByTimeAsync(200);
    await vi.advanceTimersByTimeAsync(400);
    expect(calls.filter((c) => c === 'closePages')).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(399);
    expect(calls.filter((c) => c === 'closePages')).toHaveLength(3);
    expect(d.waiting).toEqual({ pages: 1, reports: 0 });

    down.on = false;
    await vi.advanceTimersByTimeAsync(1);
    expect(events.taken).toEqual([
      { type: 'member.left', room: 'lobby', user: 'ann' },
      { type: 'room.vacated', room: 'lobby' },
    ]);
    expect(sent).toEqual([expect.objectContaining({ app: 'app', room: 'lobby', event: '$member.left' })]);
    expect(memory.members('app', 'lobby')).toEqual([]);
    expect(d.waiting).toEqual({ pages: 0, reports: 0 });
    await vi.advanceTimersByTimeAsync(5000);
    expect(events.taken).toHaveLength(2);
    d.close();
  });

  it("sweeps a dead node's pages a chunk at a time for the node registry, and reports what they ended once", async () => {
    const memory = new MemoryPresenceStore({ offlineDelayMs: 10 });
    const events = sink();
    const { departures: d, sent } = departures(memory, events, new Set());
    // 150 pages of the dead node nx, each alone in its room; one page of this node in a room of its own.
    for (let i = 0; i < 150; i++) memory.enterRoom('app', `r${i}`, `nx.${i}`);
    memory.enterRoom('app', 'mine', 'na.1');
    const claim = { node: 'nx', lapse: 1 };
    // A hundred pages a chunk: 'more' once, then 'done'; each vacated room reported once.
    expect(await d.sweepNode(claim)).toBe('more');
    expect(events.taken).toHaveLength(100);
    expect(await d.sweepNode(claim)).toBe('done');
    expect(await d.sweepNode(claim)).toBe('done');
    expect(events.taken.map((e) => (e as { room: string }).room).sort()).toEqual(
      Array.from({ length: 150 }, (_, i) => `r${i}`).sort(),
    );
    expect(sent).toEqual([]);
    expect(memory.nodePages('na')).toEqual(['na.1']);
  });

  it('tries a webhook event the store refused until it takes it, in order with the events after it', async () => {
    vi.useFakeTimers();
    const events = sink();
    const { departures: d } = departures(new MemoryPresenceStore(), events, new Set());
    events.down.on = true;
    await d.record('app', { type: 'member.left', room: 'r', user: 'ann' });
    events.down.on = false;
    // Behind the one that waits, though the store would take it now.
    await d.record('app', { type: 'room.vacated', room: 'r' });
    expect(events.taken).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(events.taken).toEqual([
      { type: 'member.left', room: 'r', user: 'ann' },
      { type: 'room.vacated', room: 'r' },
    ]);
    await d.record('app', { type: 'user.offline', user: 'ann' });
    expect(events.taken).toHaveLength(3);
    d.close();
  });

  it("closes the store's records of pages the node does not have, and leaves those it has", async () => {
    const memory = new MemoryPresenceStore();
    const events = sink();
    const held = new Set(['na.1']);
    const { departures: d } = departures(memory, events, held);
    memory.pageOpened('app', 'ann', 'na.1');
    memory.enterRoom('app', 'lobby', 'na.1');
    // Records of a page this node no longer has (its close was lost), and of another node's page.
    memory.pageOpened('app', 'bob', 'na.2');
    memory.enterRoom('app', 'lobby', 'na.2');
    memory.joinRoom('app', 'stage', { user: 'bob' }, 'na.2');
    memory.enterRoom('app', 'stage', 'nb.1');
    await d.reconcile();
    expect(events.taken).toEqual([{ type: 'member.left', room: 'stage', user: 'bob' }]);
    expect(memory.nodePages('na')).toEqual(['na.1']);
    expect(memory.nodePages('nb')).toEqual(['nb.1']);
    expect(memory.userPages('app', 'bob')).toBe(0);
    await d.reconcile();
    expect(events.taken).toHaveLength(1);
    d.close();
  });

  it('keeps at most maxWaiting pages from its check too: the rest are found again by the next check', async () => {
    const memory = new MemoryPresenceStore();
    const { store, down } = flaky(memory);
    const events = sink();
    const { departures: d } = departures(store, events, new Set(), { maxWaiting: 2 });
    const pages = ['na.1', 'na.2', 'na.3', 'na.4', 'na.5'];
    for (const page of pages) memory.enterRoom('app', `room-${page}`, page);
    // The listing answers, then the closes fail: what the check found waits, within the bound.
    const closePages = store.closePages.bind(store);
    store.closePages = (list, nowMs) => {
      down.on = true;
      return closePages(list, nowMs);
    };
    await d.reconcile();
    expect(d.waiting.pages).toBe(2);
    store.closePages = closePages;
    down.on = false;
    await d.flush();
    expect(memory.nodePages('na')).toHaveLength(3);
    await d.reconcile();
    await d.reconcile();
    expect(memory.nodePages('na')).toEqual([]);
    expect(events.taken).toHaveLength(pages.length);
    d.close();
  });

  it('keeps at most maxWaiting of each: past it the oldest page is left to the check, the oldest event dropped', async () => {
    const memory = new MemoryPresenceStore();
    const { store, down } = flaky(memory);
    const events = sink();
    const { departures: d } = departures(store, events, new Set(), { maxWaiting: 2 });
    for (const page of ['na.1', 'na.2', 'na.3']) memory.enterRoom('app', `room-${page}`, page);
    down.on = true;
    events.down.on = true;
    for (const page of ['na.1', 'na.2', 'na.3']) d.closeLater(page);
    for (const room of ['a', 'b', 'c']) await d.record('app', { type: 'room.occupied', room });
    expect(d.waiting).toEqual({ pages: 2, reports: 2 });
    // The events go though the pages still cannot be closed; `a`, then `b` were dropped at the bound.
    events.down.on = false;
    await d.record('app', { type: 'room.occupied', room: 'd' });
    await d.flush();
    expect(events.taken.map((e) => (e as { room: string }).room)).toEqual(['c', 'd']);
    down.on = false;
    await d.flush();
    // na.1 was dropped from the retries; the check of the store's records still finds it.
    expect(memory.nodePages('na')).toEqual(['na.1']);
    await d.reconcile();
    expect(memory.nodePages('na')).toEqual([]);
    expect(events.taken.slice(2)).toEqual([
      { type: 'room.vacated', room: 'room-na.2' },
      { type: 'room.vacated', room: 'room-na.3' },
      { type: 'room.vacated', room: 'room-na.1' },
    ]);
    d.close();
  });
});
