import { LIMITS } from '@realtime/protocol';
import type { Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryPresenceStore } from '../engines/memory/presence.js';
import { StoreError } from '../engines/store-error.js';
import type { GoneUser, PresenceStore } from '../engines/types.js';
import { diagnostics, type UserChanged } from './diagnostics.js';
import type { AppEvent } from './events.js';
import { UserPresence } from './user-presence.js';

const T0 = 1_700_000_000_000;
const DELAY = 1000;

/** A logger that keeps the messages of its errors. */
function logger(): { log: Logger; errors: string[] } {
  const errors: string[] = [];
  const log = { error: (_fields: unknown, message: string) => errors.push(message) } as unknown as Logger;
  return { log, errors };
}

/** An event sink keeping what it took as `app user.type`; refuses the users in `refuse`. */
function sink(): { record(app: string, event: AppEvent): Promise<void>; taken: string[]; refuse: Set<string> } {
  const taken: string[] = [];
  const refuse = new Set<string>();
  return {
    taken,
    refuse,
    record: async (app, event) => {
      const user = 'user' in event ? String(event.user) : '';
      if (refuse.has(user)) throw new StoreError('unavailable');
      taken.push(`${app} ${user} ${event.type}`);
    },
  };
}

/** Every UserPresence a test made: closed after it (their poll timers stop). */
const made: UserPresence[] = [];

/**
 * A presence store answering takeOffline from a script (one answer per call; then nothing), counting
 * the calls and their limits. The other calls are the memory store's.
 */
function scripted(answers: (GoneUser[] | Error | Promise<GoneUser[]>)[]): { store: PresenceStore; limits: number[] } {
  const limits: number[] = [];
  const store = new MemoryPresenceStore({ offlineDelayMs: DELAY });
  const takeOffline = (_now: number, limit: number): GoneUser[] | Promise<GoneUser[]> => {
    limits.push(limit);
    const next = answers.shift() ?? [];
    if (next instanceof Error) throw next;
    return next;
  };
  return { store: Object.assign(store, { takeOffline }), limits };
}

const gone = (n: number, from = 0): GoneUser[] =>
  Array.from({ length: n }, (_, i) => ({ app: 'a', user: `u${from + i}` }));

/** A UserPresence over a memory presence store (or `deps.presence`), its sink and its logged errors. */
function users(deps: Partial<ConstructorParameters<typeof UserPresence>[0]> = {}) {
  const events = sink();
  const { log, errors } = logger();
  const presence = deps.presence ?? new MemoryPresenceStore({ offlineDelayMs: DELAY });
  const users = new UserPresence({ node: 'n1', presence, events, log, now: Date.now, offlineDelayMs: DELAY, ...deps });
  users.start();
  made.push(users);
  return { users, events, errors, presence };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  for (const u of made.splice(0)) u.close();
  vi.useRealTimers();
});

describe('UserPresence', () => {
  it("reports user.online at a user's first page only, and user.offline the delay after their last page went", async () => {
    const { users: u, events } = users();
    await u.opened('a', 'ann', 'p1');
    await u.opened('a', 'ann', 'p2');
    await u.opened('b', 'ann', 'p3'); // the same user id in another app is another user
    expect(events.taken).toEqual(['a ann user.online', 'b ann user.online']);

    await u.closed('a', 'ann', 'p1');
    await vi.advanceTimersByTimeAsync(2 * DELAY);
    expect(events.taken).toHaveLength(2); // a page of hers is still open

    await u.closed('a', 'ann', 'p2');
    await vi.advanceTimersByTimeAsync(DELAY - 100);
    expect(events.taken).toHaveLength(2);
    // Polled every tenth of the delay: reported within one poll of falling due, once.
    await vi.advanceTimersByTimeAsync(100 + DELAY / 10);
    expect(events.taken).toEqual(['a ann user.online', 'b ann user.online', 'a ann user.offline']);
    await vi.advanceTimersByTimeAsync(5 * DELAY);
    expect(events.taken).toHaveLength(3);
  });

  it('a page back within the delay: no user.offline, and no second user.online', async () => {
    const { users: u, events } = users();
    await u.opened('a', 'bob', 'p1');
    await u.closed('a', 'bob', 'p1');
    await vi.advanceTimersByTimeAsync(DELAY / 2);
    await u.opened('a', 'bob', 'p2');
    await vi.advanceTimersByTimeAsync(3 * DELAY);
    expect(events.taken).toEqual(['a bob user.online']);
    // Gone for good this time: offline once, and online again at a later first page.
    await u.closed('a', 'bob', 'p2');
    await vi.advanceTimersByTimeAsync(DELAY + DELAY / 10);
    await u.opened('a', 'bob', 'p3');
    expect(events.taken).toEqual(['a bob user.online', 'a bob user.offline', 'a bob user.online']);
  });

  it('polls every tenth of the offline delay, at least every 250 ms and at most every 20 ms', async () => {
    for (const [delay, every] of [
      [DELAY, 100],
      [100, 20],
      [60_000, 250],
      [undefined, Math.min(250, Math.max(20, LIMITS.offlineDelayMs / 10))],
    ] as const) {
      const { store, limits } = scripted([]);
      const u = new UserPresence({
        node: 'n1',
        presence: store,
        events: sink(),
        log: logger().log,
        now: Date.now,
        ...(delay === undefined ? {} : { offlineDelayMs: delay }),
      });
      u.start();
      made.push(u);
      await vi.advanceTimersByTimeAsync(10 * every - 1);
      expect(limits, `offline delay ${delay}`).toHaveLength(9);
      await vi.advanceTimersByTimeAsync(1);
      expect(limits).toHaveLength(10);
      u.close();
    }
  });

  it('claims the users due in rounds of 500 until a round comes back short, in one poll', async () => {
    const { store, limits } = scripted([gone(500), gone(500, 500), gone(3, 1000)]);
    const { events } = users({ presence: store });
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(limits).toEqual([500, 500, 500]);
    expect(events.taken).toHaveLength(1003);
    expect(events.taken[0]).toBe('a u0 user.offline');
    expect(events.taken[1002]).toBe('a u1002 user.offline');
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(limits).toEqual([500, 500, 500, 500]);
  });

  it('does not start a poll while the last one still waits for the store', async () => {
    let answer: (users: GoneUser[]) => void = () => {};
    const slow = new Promise<GoneUser[]>((resolve) => {
      answer = resolve;
    });
    const { store, limits } = scripted([slow, gone(1, 7)]);
    const { events } = users({ presence: store });
    await vi.advanceTimersByTimeAsync(10 * (DELAY / 10));
    expect(limits).toHaveLength(1);
    answer(gone(1));
    await vi.advanceTimersByTimeAsync(0);
    expect(events.taken).toEqual(['a u0 user.offline']);
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(limits).toHaveLength(2);
    expect(events.taken).toEqual(['a u0 user.offline', 'a u7 user.offline']);
  });

  it('a failed read of the reports due is logged, never thrown, and the next poll tries again', async () => {
    const { store, limits } = scripted([new StoreError('unavailable'), gone(2)]);
    const { events, errors } = users({ presence: store });
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(errors).toEqual(['reading the offline reports due failed']);
    expect(events.taken).toEqual([]);
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(limits).toHaveLength(2);
    expect(events.taken).toEqual(['a u0 user.offline', 'a u1 user.offline']);
  });

  it('a user.offline the sink refused is logged and lost; the others of the round are still reported', async () => {
    const { store } = scripted([gone(3)]);
    const { events, errors } = users({ presence: store });
    events.refuse.add('u1');
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(events.taken).toEqual(['a u0 user.offline', 'a u2 user.offline']);
    expect(errors).toEqual(['recording user.offline failed']);
    // Claimed once: never asked for again.
    events.refuse.clear();
    await vi.advanceTimersByTimeAsync(DELAY);
    expect(events.taken).toHaveLength(2);
  });

  it('opening a page: a refused user.online is logged and the page stays; a failed presence store rejects', async () => {
    const { users: u, events, errors } = users();
    events.refuse.add('cid');
    await expect(u.opened('a', 'cid', 'p1')).resolves.toBeUndefined();
    expect(errors).toEqual(['recording user.online failed']);
    // The store has her page: a second page is not her first.
    events.refuse.clear();
    await u.opened('a', 'cid', 'p2');
    expect(events.taken).toEqual([]);

    const broken = new MemoryPresenceStore({ offlineDelayMs: DELAY });
    const failing = Object.assign(broken, {
      pageOpened: () => Promise.reject(new StoreError('unavailable')),
      pageClosed: () => Promise.reject(new StoreError('unavailable')),
    });
    const other = users({ presence: failing });
    await expect(other.users.opened('a', 'dan', 'p1')).rejects.toBeInstanceOf(StoreError);
    await expect(other.users.closed('a', 'dan', 'p1')).rejects.toBeInstanceOf(StoreError);
    expect(other.events.taken).toEqual([]);
  });

  it('hands the store its clock: the offline falls due the delay after the close, by that clock', async () => {
    let now = T0 + 5_000_000;
    const { users: u, events } = users({ now: () => now });
    await u.opened('a', 'eve', 'p1');
    await u.closed('a', 'eve', 'p1');
    // Real (fake) time passes, the injected clock does not: nothing falls due.
    await vi.advanceTimersByTimeAsync(3 * DELAY);
    expect(events.taken).toEqual(['a eve user.online']);
    now += DELAY;
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(events.taken).toEqual(['a eve user.online', 'a eve user.offline']);
  });

  it('tells users coming online and going offline on the diagnostics channel, as its node, when listened to', async () => {
    const told: UserChanged[] = [];
    const listener = (message: UserChanged) => told.push(message);
    const { users: u } = users();
    await u.opened('a', 'eve', 'p0');
    diagnostics.user.subscribe(listener);
    try {
      await u.opened('a', 'fay', 'p1');
      await u.opened('b', 'gus', 'p2');
      // A second page of a user already online: nothing to tell.
      await u.opened('a', 'fay', 'p3');
      await u.closed('a', 'fay', 'p1');
      await u.closed('a', 'fay', 'p3');
      await vi.advanceTimersByTimeAsync(DELAY + DELAY / 10);
    } finally {
      diagnostics.user.unsubscribe(listener);
    }
    // eve came online before anyone listened: not told.
    expect(told).toEqual([
      { node: 'n1', app: 'a', type: 'user.online', user: 'fay' },
      { node: 'n1', app: 'b', type: 'user.online', user: 'gus' },
      { node: 'n1', app: 'a', type: 'user.offline', user: 'fay' },
    ]);
  });

  it('polls no more once closed', async () => {
    const { store, limits } = scripted([]);
    const { users: u } = users({ presence: store });
    await vi.advanceTimersByTimeAsync(DELAY / 10);
    expect(limits).toHaveLength(1);
    u.close();
    await vi.advanceTimersByTimeAsync(10 * DELAY);
    expect(limits).toHaveLength(1);
  });
});
