/**
 * The PresenceStore contract as one test suite, run by every engine's runner file.
 * Time is never read from the clock: every call gets `nowMs`, so the suite moves time by hand.
 *
 * Answers that start a webhook event (`true` of pageOpened/enterRoom/exitRoom/joinRoom/leaveRoom,
 * each user of takeOffline) must reach exactly one caller; with a `peer` (a second store on the same
 * backend, as on another node) the suite checks that across both.
 *
 * @example
 * ```ts
 * presenceContract('MemoryPresenceStore', async ({ offlineDelayMs }) => {
 *   const store = new MemoryPresenceStore({ offlineDelayMs });
 *   return { store, cleanup: async () => store.close() };
 * });
 * ```
 */
import type { Member } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import type { Departure, GoneUser, NodeClaim, PresenceStore } from '../types.js';

export interface PresenceHarness {
  /** A store where nobody is online. */
  store: PresenceStore;
  /**
   * A second store on the same backend, as on another node: what either is told counts for both.
   * Engines of one process leave it out; the tests then use `store` for both sides.
   */
  peer?: PresenceStore;
  /** Closes the stores and removes whatever they kept. */
  cleanup(): Promise<void>;
}

export interface PresenceOptions {
  /** How long a user stays online after their last page closed. */
  offlineDelayMs: number;
}

const T0 = 1_700_000_000_000;
const DELAY = 10_000;

/** Users as `app/user`, sorted: takeOffline promises no order. */
const names = (gone: readonly GoneUser[]) => gone.map((g) => `${g.app}/${g.user}`).sort();

export function presenceContract(
  name: string,
  makeStore: (options: PresenceOptions) => Promise<PresenceHarness>,
): void {
  describe(`PresenceStore contract: ${name}`, () => {
    const open: PresenceHarness[] = [];

    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.cleanup();
    });

    async function makeBoth(offlineDelayMs = DELAY): Promise<{ store: PresenceStore; peer: PresenceStore }> {
      const harness = await makeStore({ offlineDelayMs });
      open.push(harness);
      return { store: harness.store, peer: harness.peer ?? harness.store };
    }

    async function make(offlineDelayMs = DELAY): Promise<PresenceStore> {
      return (await makeBoth(offlineDelayMs)).store;
    }

    /** Whether one user is online. */
    async function isOnline(store: PresenceStore, app: string, user: string, nowMs: number): Promise<boolean> {
      const answer = await store.online(app, [user], nowMs);
      expect(answer).toHaveLength(1);
      return answer[0] === true;
    }

    /** Every user due at `nowMs`, claimed in one go. */
    async function due(store: PresenceStore, nowMs: number): Promise<string[]> {
      return names(await store.takeOffline(nowMs, 10_000));
    }

    describe('online', () => {
      it('knows nobody at first', async () => {
        const store = await make();
        expect(await store.online('app1', ['ann', 'bob', ''], T0)).toEqual([false, false, false]);
        expect(await store.online('app1', [], T0)).toEqual([]);
        expect(await due(store, T0 + 100 * DELAY)).toEqual([]);
      });

      it('has a user online from their first page on, for as long as it is open', async () => {
        const store = await make();
        expect(await store.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + 100 * DELAY)).toBe(true);
        expect(await isOnline(store, 'app1', 'bob', T0)).toBe(false);
        expect(await due(store, T0 + 100 * DELAY)).toEqual([]);
      });

      it('reports a user online once however many pages they open, and keeps them until all closed and the delay passed', async () => {
        const store = await make();
        expect(await store.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
        expect(await store.pageOpened('app1', 'ann', 'p2', T0 + 1)).toBe(false);
        await store.pageClosed('app1', 'ann', 'p1', T0 + 2);
        expect(await isOnline(store, 'app1', 'ann', T0 + 2)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + 2 + 10 * DELAY)).toBe(true);
        expect(await due(store, T0 + 2 + 10 * DELAY)).toEqual([]);
        const lastClose = T0 + 20 * DELAY;
        await store.pageClosed('app1', 'ann', 'p2', lastClose);
        expect(await isOnline(store, 'app1', 'ann', lastClose)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', lastClose + DELAY - 1)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', lastClose + DELAY)).toBe(false);
      });

      it('counts the same page opened twice once', async () => {
        const store = await make();
        expect(await store.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
        expect(await store.pageOpened('app1', 'ann', 'p1', T0 + 1)).toBe(false);
        await store.pageClosed('app1', 'ann', 'p1', T0 + 2);
        expect(await isOnline(store, 'app1', 'ann', T0 + 2 + DELAY)).toBe(false);
        expect(await due(store, T0 + 2 + DELAY)).toEqual(['app1/ann']);
      });

      it('keeps a user online until the offline delay after the last close, then offline', async () => {
        const store = await make();
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p1', T0 + 500);
        expect(await isOnline(store, 'app1', 'ann', T0 + 500)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + 500 + DELAY - 1)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + 500 + DELAY)).toBe(false);
        expect(await isOnline(store, 'app1', 'ann', T0 + 500 + 100 * DELAY)).toBe(false);
      });

      it('uses the offline delay it was given', async () => {
        const store = await make(2500);
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        expect(await isOnline(store, 'app1', 'ann', T0 + 2499)).toBe(true);
        expect(await due(store, T0 + 2499)).toEqual([]);
        expect(await isOnline(store, 'app1', 'ann', T0 + 2500)).toBe(false);
        expect(await due(store, T0 + 2500)).toEqual(['app1/ann']);
      });

      it('does not change its answer by being asked', async () => {
        const store = await make();
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        for (let i = 0; i < 3; i++) expect(await isOnline(store, 'app1', 'ann', T0 + DELAY / 2)).toBe(true);
        for (let i = 0; i < 3; i++) expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(false);
        // Asking about a time to come changes nothing either.
        expect(await isOnline(store, 'app1', 'ann', T0 + DELAY / 4)).toBe(true);
        expect(await due(store, T0 + DELAY)).toEqual(['app1/ann']);
        expect(await store.pageOpened('app1', 'ann', 'p2', T0 + DELAY + 1)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + DELAY + 1)).toBe(true);
      });

      it('answers each id in the order given, duplicates included', async () => {
        const store = await make();
        for (const user of ['ann', 'cy', 'dé 🚀']) await store.pageOpened('app1', user, `page-${user}`, T0);
        await store.pageOpened('app1', 'gone', 'page-gone', T0);
        await store.pageClosed('app1', 'gone', 'page-gone', T0);
        const asked = ['cy', 'bob', 'ann', 'cy', 'gone', 'dé 🚀', 'bob', 'ann', 'Ann'];
        expect(await store.online('app1', asked, T0 + 1)).toEqual([
          true,
          false,
          true,
          true,
          true,
          true,
          false,
          true,
          false,
        ]);
        expect(await store.online('app1', asked, T0 + DELAY)).toEqual([
          true,
          false,
          true,
          true,
          false,
          true,
          false,
          true,
          false,
        ]);
      });

      it('answers for many users at once', async () => {
        const store = await make();
        const users = Array.from({ length: 1000 }, (_, i) => `user-${i}`);
        await Promise.all(users.map((user) => store.pageOpened('app1', user, `p-${user}`, T0)));
        await Promise.all(
          users.map((user, i) => (i % 2 === 1 ? store.pageClosed('app1', user, `p-${user}`, T0) : undefined)),
        );
        const answer = await store.online('app1', [...users].reverse(), T0 + DELAY);
        expect(answer).toEqual(users.map((_, i) => i % 2 === 0).reverse());
        expect(await due(store, T0 + DELAY)).toEqual(
          names(users.filter((_, i) => i % 2 === 1).map((user) => ({ app: 'app1', user }))),
        );
      });

      it('keeps apps apart', async () => {
        const store = await make();
        expect(await store.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
        expect(await isOnline(store, 'app2', 'ann', T0)).toBe(false);
        // A close in another app, where ann has no page, changes nothing here.
        await store.pageClosed('app2', 'ann', 'p1', T0);
        expect(await isOnline(store, 'app1', 'ann', T0 + 10 * DELAY)).toBe(true);
        expect(await due(store, T0 + 10 * DELAY)).toEqual([]);
        // A page in each app: each app's first is an online of its own; closing one leaves the other.
        expect(await store.pageOpened('app2', 'ann', 'p2', T0)).toBe(true);
        await store.pageClosed('app2', 'ann', 'p2', T0 + 1);
        expect(await isOnline(store, 'app2', 'ann', T0 + 1 + DELAY)).toBe(false);
        expect(await isOnline(store, 'app1', 'ann', T0 + 1 + DELAY)).toBe(true);
        expect(await store.takeOffline(T0 + 1 + DELAY, 10)).toEqual([{ app: 'app2', user: 'ann' }]);
      });

      it('ignores closes of pages that were never opened, and a second close of a page', async () => {
        const store = await make();
        await store.pageClosed('app1', 'ghost', 'p0', T0);
        expect(await isOnline(store, 'app1', 'ghost', T0)).toBe(false);
        expect(await due(store, T0 + 10 * DELAY)).toEqual([]);
        // Another page of a user with one open: she stays online, nothing falls due.
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p9', T0);
        await store.pageClosed('app1', 'bob', 'p1', T0);
        expect(await isOnline(store, 'app1', 'ann', T0 + 10 * DELAY)).toBe(true);
        expect(await due(store, T0 + 10 * DELAY)).toEqual([]);
        await store.pageClosed('app1', 'ann', 'p1', T0 + 10 * DELAY);
        // One close too many: it must not move the delay nor report twice.
        await store.pageClosed('app1', 'ann', 'p1', T0 + 10 * DELAY + 5);
        expect(await isOnline(store, 'app1', 'ann', T0 + 11 * DELAY)).toBe(false);
        expect(await due(store, T0 + 11 * DELAY)).toEqual(['app1/ann']);
        expect(await due(store, T0 + 20 * DELAY)).toEqual([]);
        expect(await store.pageOpened('app1', 'ann', 'p2', T0 + 20 * DELAY)).toBe(true);
        await store.pageClosed('app1', 'ann', 'p2', T0 + 21 * DELAY);
        expect(await isOnline(store, 'app1', 'ann', T0 + 22 * DELAY)).toBe(false);
      });
    });

    describe('offline reports', () => {
      it('hands a user out once their offline is due, and once only', async () => {
        const store = await make();
        expect(await store.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        expect(await store.takeOffline(T0 + DELAY - 1, 10)).toEqual([]);
        expect(await store.takeOffline(T0 + DELAY, 10)).toEqual([{ app: 'app1', user: 'ann' }]);
        expect(await store.takeOffline(T0 + DELAY, 10)).toEqual([]);
        expect(await store.takeOffline(T0 + 100 * DELAY, 10)).toEqual([]);
        expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(false);
      });

      it('has a user online again, reported anew, when a page opens after they went offline', async () => {
        const store = await make();
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(false);
        expect(await due(store, T0 + DELAY)).toEqual(['app1/ann']);
        expect(await store.pageOpened('app1', 'ann', 'p2', T0 + 2 * DELAY)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + 2 * DELAY)).toBe(true);
        await store.pageClosed('app1', 'ann', 'p2', T0 + 3 * DELAY);
        expect(await isOnline(store, 'app1', 'ann', T0 + 4 * DELAY - 1)).toBe(true);
        expect(await due(store, T0 + 4 * DELAY - 1)).toEqual([]);
        expect(await isOnline(store, 'app1', 'ann', T0 + 4 * DELAY)).toBe(false);
        expect(await due(store, T0 + 4 * DELAY)).toEqual(['app1/ann']);
      });

      it('does not flap: a page back within the delay is no new online and cancels the offline', async () => {
        const store = await make();
        expect(await store.pageOpened('app1', 'ann', 'p1', T0)).toBe(true);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        expect(await store.pageOpened('app1', 'ann', 'p2', T0 + DELAY - 1)).toBe(false);
        expect(await isOnline(store, 'app1', 'ann', T0 + DELAY)).toBe(true);
        expect(await due(store, T0 + DELAY)).toEqual([]);
        expect(await isOnline(store, 'app1', 'ann', T0 + 50 * DELAY)).toBe(true);
        expect(await due(store, T0 + 50 * DELAY)).toEqual([]);
        // The delay counts from the new last close.
        const close = T0 + 60 * DELAY;
        await store.pageClosed('app1', 'ann', 'p2', close);
        expect(await isOnline(store, 'app1', 'ann', close + DELAY - 1)).toBe(true);
        expect(await due(store, close + DELAY - 1)).toEqual([]);
        expect(await isOnline(store, 'app1', 'ann', close + DELAY)).toBe(false);
        expect(await due(store, close + DELAY)).toEqual(['app1/ann']);
      });

      it('hands out a user who closed, came back and closed again once, when the later delay passed', async () => {
        const store = await make();
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        await store.pageOpened('app1', 'ann', 'p2', T0 + 100);
        await store.pageClosed('app1', 'ann', 'p2', T0 + 200);
        expect(await due(store, T0 + DELAY)).toEqual([]);
        expect(await isOnline(store, 'app1', 'ann', T0 + DELAY + 199)).toBe(true);
        expect(await due(store, T0 + DELAY + 200)).toEqual(['app1/ann']);
        expect(await due(store, T0 + 10 * DELAY)).toEqual([]);
      });

      it('does not report a user whose page came back after the delay but before the report was taken', async () => {
        const store = await make();
        await store.pageOpened('app1', 'ann', 'p1', T0);
        await store.pageClosed('app1', 'ann', 'p1', T0);
        // Nobody took the offline in between: it is still pending, so neither report goes out.
        expect(await store.pageOpened('app1', 'ann', 'p2', T0 + 5 * DELAY)).toBe(false);
        expect(await isOnline(store, 'app1', 'ann', T0 + 5 * DELAY)).toBe(true);
        expect(await isOnline(store, 'app1', 'ann', T0 + 50 * DELAY)).toBe(true);
        expect(await due(store, T0 + 50 * DELAY)).toEqual([]);
        await store.pageClosed('app1', 'ann', 'p2', T0 + 60 * DELAY);
        expect(await due(store, T0 + 61 * DELAY)).toEqual(['app1/ann']);
      });

      it('hands out at most `limit` users per call, each once, over apps', async () => {
        const store = await make();
        const users: GoneUser[] = [];
        for (let i = 0; i < 7; i++) users.push({ app: i % 2 ? 'app1' : 'app2', user: `u${i}` });
        users.push({ app: 'app1', user: 'x:y ü' });
        for (const [i, { app, user }] of users.entries()) {
          await store.pageOpened(app, user, `p${i}`, T0);
          await store.pageClosed(app, user, `p${i}`, T0 + i);
        }
        // One more, due later.
        await store.pageOpened('app1', 'late', 'pl', T0);
        await store.pageClosed('app1', 'late', 'pl', T0 + 5 * DELAY);
        const taken: GoneUser[] = [];
        for (;;) {
          const batch = await store.takeOffline(T0 + 2 * DELAY, 3);
          expect(batch.length).toBeLessThanOrEqual(3);
          if (batch.length === 0) break;
          taken.push(...batch);
        }
        expect(taken).toHaveLength(users.length);
        expect(names(taken)).toEqual(names(users));
        expect(await store.takeOffline(T0 + 5 * DELAY, 0)).toEqual([]);
        expect(await store.takeOffline(T0 + 6 * DELAY, 10)).toEqual([{ app: 'app1', user: 'late' }]);
      });

      it('never hands one user to two callers, on one node or two', async () => {
        const { store, peer } = await makeBoth();
        const users = Array.from({ length: 60 }, (_, i) => `u${i}`);
        for (const [i, user] of users.entries()) {
          const on = i % 2 ? peer : store;
          await on.pageOpened('app1', user, `p${i}`, T0);
          await on.pageClosed('app1', user, `p${i}`, T0 + i);
        }
        const taken: GoneUser[] = [];
        // Callers on both sides at once, each claiming a few at a time until nothing is left.
        const claim = async (on: PresenceStore) => {
          for (;;) {
            const batch = await on.takeOffline(T0 + 2 * DELAY, 2);
            if (batch.length === 0) return;
            taken.push(...batch);
          }
        };
        await Promise.all([claim(store), claim(peer), claim(store), claim(peer)]);
        expect(taken).toHaveLength(users.length);
        expect(names(taken)).toEqual(names(users.map((user) => ({ app: 'app1', user }))));
      });

      it('counts pages on every node: a user is online while any node has a page', async () => {
        const { store, peer } = await makeBoth();
        expect(await store.pageOpened('app1', 'ann', 'node-a:p1', T0)).toBe(true);
        expect(await isOnline(peer, 'app1', 'ann', T0)).toBe(true);
        expect(await peer.pageOpened('app1', 'ann', 'node-b:p1', T0 + 1)).toBe(false);
        await store.pageClosed('app1', 'ann', 'node-a:p1', T0 + 2);
        expect(await isOnline(store, 'app1', 'ann', T0 + 10 * DELAY)).toBe(true);
        expect(await due(store, T0 + 10 * DELAY)).toEqual([]);
        expect(await due(peer, T0 + 10 * DELAY)).toEqual([]);
        await peer.pageClosed('app1', 'ann', 'node-b:p1', T0 + 10 * DELAY);
        expect(await isOnline(store, 'app1', 'ann', T0 + 11 * DELAY - 1)).toBe(true);
        expect(await isOnline(peer, 'app1', 'ann', T0 + 11 * DELAY)).toBe(false);
        expect(await due(store, T0 + 11 * DELAY)).toEqual(['app1/ann']);
        expect(await due(peer, T0 + 11 * DELAY)).toEqual([]);
      });

      it('reports a user online to one caller when pages open on two nodes at once', async () => {
        const { store, peer } = await makeBoth();
        for (let round = 0; round < 10; round++) {
          const user = `u${round}`;
          const answers = await Promise.all([
            store.pageOpened('app1', user, 'a1', T0),
            peer.pageOpened('app1', user, 'b1', T0),
            store.pageOpened('app1', user, 'a2', T0),
            peer.pageOpened('app1', user, 'b2', T0),
          ]);
          expect(answers.filter((answer) => answer)).toHaveLength(1);
        }
      });
    });

    describe('rooms', () => {
      it('has a room occupied from its first page to its last, counted by page', async () => {
        const store = await make();
        expect(await store.enterRoom('app1', 'lobby', 'p1')).toBe(true);
        expect(await store.enterRoom('app1', 'lobby', 'p2')).toBe(false);
        // The same page twice counts once.
        expect(await store.enterRoom('app1', 'lobby', 'p1')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'p1')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'p2')).toBe(true);
        // Vacated: a second exit, or one of a page never there, is no second vacate.
        expect(await store.exitRoom('app1', 'lobby', 'p2')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'p1')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'p3')).toBe(false);
        expect(await store.enterRoom('app1', 'lobby', 'p3')).toBe(true);
        expect(await store.exitRoom('app1', 'lobby', 'p3')).toBe(true);
      });

      it('does not vacate a room on the exit of a page that is not in it', async () => {
        const store = await make();
        expect(await store.exitRoom('app1', 'lobby', 'p1')).toBe(false);
        expect(await store.enterRoom('app1', 'lobby', 'p1')).toBe(true);
        expect(await store.exitRoom('app1', 'lobby', 'p2')).toBe(false);
        expect(await store.enterRoom('app1', 'lobby', 'p2')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'p2')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'p1')).toBe(true);
      });

      it('keeps rooms apart across apps and names', async () => {
        const store = await make();
        const rooms: Array<[string, string]> = [
          ['app1', 'lobby'],
          ['app1', 'Lobby'],
          ['app1', 'lobby:x'],
          ['app1', 'ünï 🚀'],
          ['app2', 'lobby'],
        ];
        for (const [app, room] of rooms) expect(await store.enterRoom(app, room, 'p1')).toBe(true);
        for (const [app, room] of rooms) expect(await store.exitRoom(app, room, 'p1')).toBe(true);
      });

      it('counts pages on every node: one occupied, one vacated, whoever asks', async () => {
        const { store, peer } = await makeBoth();
        for (let round = 0; round < 10; round++) {
          const room = `room-${round}`;
          const entered = await Promise.all([
            store.enterRoom('app1', room, 'a1'),
            peer.enterRoom('app1', room, 'b1'),
            store.enterRoom('app1', room, 'a2'),
            peer.enterRoom('app1', room, 'b2'),
          ]);
          expect(entered.filter((answer) => answer)).toHaveLength(1);
          const left = await Promise.all([
            peer.exitRoom('app1', room, 'a1'),
            store.exitRoom('app1', room, 'b1'),
            peer.exitRoom('app1', room, 'a2'),
            store.exitRoom('app1', room, 'b2'),
          ]);
          expect(left.filter((answer) => answer)).toHaveLength(1);
        }
      });
    });

    describe('size of one room', () => {
      it('counts the pages seated on every node and the presence members, each user once', async () => {
        const { store, peer } = await makeBoth();
        expect(await store.roomSize('app1', 'lobby')).toEqual({ pages: 0, members: 0 });
        await store.enterRoom('app1', 'lobby', 'a1');
        await peer.enterRoom('app1', 'lobby', 'b1');
        await peer.enterRoom('app1', 'lobby', 'b2');
        // Two pages of one user are one member; a page seated without presence is no member.
        await store.joinRoom('app1', 'lobby', { user: 'ann' }, 'a1');
        await peer.joinRoom('app1', 'lobby', { user: 'ann' }, 'b1');
        await store.enterRoom('app2', 'lobby', 'c1');
        expect(await peer.roomSize('app1', 'lobby')).toEqual({ pages: 3, members: 1 });
        expect(await store.roomSize('app2', 'lobby')).toEqual({ pages: 1, members: 0 });
        expect(await store.roomSize('app1', 'Lobby')).toEqual({ pages: 0, members: 0 });
        await peer.leaveRoom('app1', 'lobby', 'ann', 'b1');
        await peer.exitRoom('app1', 'lobby', 'b1');
        expect(await store.roomSize('app1', 'lobby')).toEqual({ pages: 2, members: 1 });
        await store.leaveRoom('app1', 'lobby', 'ann', 'a1');
        for (const page of ['a1', 'b2']) await store.exitRoom('app1', 'lobby', page);
        expect(await peer.roomSize('app1', 'lobby')).toEqual({ pages: 0, members: 0 });
      });
    });

    describe('presence rooms', () => {
      const ann: Member = { user: 'ann', info: { name: 'Ann ü', tags: ['a', 1, null], nested: { x: true } } };
      const bob: Member = { user: 'bob' };
      const cy: Member = { user: 'cy 🚀', info: {} };

      it('lists nobody at first', async () => {
        const store = await make();
        expect(await store.members('app1', 'lobby')).toEqual([]);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p1')).toBe(false);
        expect(await store.members('app1', 'lobby')).toEqual([]);
      });

      it('lists each user once, in the order they joined, with their info intact', async () => {
        const store = await make();
        expect(await store.joinRoom('app1', 'lobby', ann, 'p1')).toBe(true);
        expect(await store.joinRoom('app1', 'lobby', bob, 'p2')).toBe(true);
        expect(await store.joinRoom('app1', 'lobby', ann, 'p3')).toBe(false);
        expect(await store.joinRoom('app1', 'lobby', cy, 'p4')).toBe(true);
        // The same page twice counts once.
        expect(await store.joinRoom('app1', 'lobby', bob, 'p2')).toBe(false);
        expect(await store.members('app1', 'lobby')).toEqual([ann, bob, cy]);
      });

      it('has a user leave with their last page, and come back at the end of the list', async () => {
        const store = await make();
        await store.joinRoom('app1', 'lobby', ann, 'p1');
        await store.joinRoom('app1', 'lobby', ann, 'p2');
        await store.joinRoom('app1', 'lobby', bob, 'p3');
        await store.joinRoom('app1', 'lobby', bob, 'p3');
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p1')).toBe(false);
        expect(await store.members('app1', 'lobby')).toEqual([ann, bob]);
        // A page that is not there, or another user's page, takes nobody out.
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p3')).toBe(false);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p9')).toBe(false);
        expect(await store.leaveRoom('app1', 'lobby', 'bob', 'p2')).toBe(false);
        expect(await store.members('app1', 'lobby')).toEqual([ann, bob]);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p2')).toBe(true);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p2')).toBe(false);
        expect(await store.members('app1', 'lobby')).toEqual([bob]);
        expect(await store.joinRoom('app1', 'lobby', ann, 'p5')).toBe(true);
        expect(await store.members('app1', 'lobby')).toEqual([bob, ann]);
        // The same page held bob once: one leave takes him out.
        expect(await store.leaveRoom('app1', 'lobby', 'bob', 'p3')).toBe(true);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'p5')).toBe(true);
        expect(await store.members('app1', 'lobby')).toEqual([]);
      });

      it('keeps presence rooms apart across apps and names', async () => {
        const store = await make();
        await store.joinRoom('app1', 'lobby', ann, 'p1');
        await store.joinRoom('app1', 'Lobby', bob, 'p1');
        await store.joinRoom('app2', 'lobby', cy, 'p1');
        await store.joinRoom('app1', 'lobby:x', cy, 'p1');
        expect(await store.members('app1', 'lobby')).toEqual([ann]);
        expect(await store.members('app1', 'Lobby')).toEqual([bob]);
        expect(await store.members('app2', 'lobby')).toEqual([cy]);
        expect(await store.members('app1', 'lobby:x')).toEqual([cy]);
        expect(await store.leaveRoom('app2', 'lobby', 'ann', 'p1')).toBe(false);
        expect(await store.members('app1', 'lobby')).toEqual([ann]);
        // Presence rooms and occupancy are counted apart.
        expect(await store.enterRoom('app1', 'lobby', 'p1')).toBe(true);
      });

      it('counts pages on every node: one join and one leave per user, whoever asks', async () => {
        const { store, peer } = await makeBoth();
        for (let round = 0; round < 10; round++) {
          const room = `room-${round}`;
          const joined = await Promise.all([
            store.joinRoom('app1', room, ann, 'a1'),
            peer.joinRoom('app1', room, ann, 'b1'),
            store.joinRoom('app1', room, ann, 'a2'),
            peer.joinRoom('app1', room, bob, 'b2'),
          ]);
          expect(joined.filter((answer) => answer)).toHaveLength(2);
          expect(joined[3]).toBe(true);
          expect(await peer.members('app1', room)).toContainEqual(ann);
          expect(await store.members('app1', room)).toHaveLength(2);
          const left = await Promise.all([
            peer.leaveRoom('app1', room, 'ann', 'a1'),
            store.leaveRoom('app1', room, 'ann', 'b1'),
            peer.leaveRoom('app1', room, 'ann', 'a2'),
          ]);
          expect(left.filter((answer) => answer)).toHaveLength(1);
          expect(await store.members('app1', room)).toEqual([bob]);
        }
      });
    });

    describe('pages of members', () => {
      /** Every member by walking the cursors, `limit` at a time. */
      const walk = async (store: PresenceStore, room: string, limit: number) => {
        const seen: string[] = [];
        let after: string | undefined;
        for (let pages = 0; pages < 10_000; pages++) {
          const page = await store.memberPage('app1', room, after === undefined ? { limit } : { after, limit });
          expect(page.members.length).toBeLessThanOrEqual(limit);
          seen.push(...page.members.map((m) => m.user));
          if (page.cursor === undefined) return seen;
          after = page.cursor;
        }
        throw new Error('the cursors never ended');
      };

      it('answers an empty page and a zero count for a room nobody joined', async () => {
        const store = await make();
        const page = await store.memberPage('app1', 'nobody', { limit: 10 });
        expect(page.members).toEqual([]);
        expect(page.count).toBe(0);
        expect(page.cursor).toBeUndefined();
        expect((await store.memberCount('app1', 'nobody')).count).toBe(0);
      });

      it('pages through the members in join order, each once, with their info and the count', async () => {
        const store = await make();
        const users = Array.from({ length: 25 }, (_, i) => `u${i}`);
        for (const [i, user] of users.entries()) {
          await store.joinRoom('app1', 'big', { user, info: { i } }, `p${i}`);
          // A second page of the same user adds nobody.
          if (i % 5 === 0) await store.joinRoom('app1', 'big', { user, info: { i } }, `q${i}`);
        }
        const first = await store.memberPage('app1', 'big', { limit: 10 });
        expect(first.count).toBe(25);
        expect(first.members).toEqual(users.slice(0, 10).map((user, i) => ({ user, info: { i } })));
        // The API checks a cursor by this shape (a sequence number) before it reaches the store.
        expect(first.cursor).toMatch(/^[0-9]{1,16}$/);
        expect(await walk(store, 'big', 10)).toEqual(users);
        expect(await walk(store, 'big', 25)).toEqual(users);
        expect(await walk(store, 'big', 100)).toEqual(users);
        expect((await store.memberCount('app1', 'big')).count).toBe(25);
      });

      it('walks every member who stays exactly once while others join and leave between pages', async () => {
        const store = await make();
        for (let i = 0; i < 30; i++) await store.joinRoom('app1', 'churn', { user: `u${i}` }, `p${i}`);
        const seen: string[] = [];
        let after: string | undefined;
        let step = 0;
        for (;;) {
          const page = await store.memberPage(
            'app1',
            'churn',
            after === undefined ? { limit: 4 } : { after, limit: 4 },
          );
          seen.push(...page.members.map((m) => m.user));
          // Between pages: one of the odd users leaves (before or after the walk's place), a newcomer joins.
          await store.leaveRoom('app1', 'churn', `u${((step * 7) % 30) | 1}`, `p${((step * 7) % 30) | 1}`);
          await store.joinRoom('app1', 'churn', { user: `new${step}` }, `n${step}`);
          step++;
          if (page.cursor === undefined) break;
          after = page.cursor;
        }
        const stayed = Array.from({ length: 15 }, (_, i) => `u${i * 2}`);
        for (const user of stayed) expect(seen.filter((u) => u === user)).toHaveLength(1);
        expect(new Set(seen).size).toBe(seen.length);
        const now = await store.memberCount('app1', 'churn');
        expect(now.count).toBe((await store.members('app1', 'churn')).length);
      });

      it('pages right after most members left (what is left is compacted, cursors still hold)', async () => {
        const store = await make();
        for (let i = 0; i < 300; i++) await store.joinRoom('app1', 'thin', { user: `u${i}` }, `p${i}`);
        const first = await store.memberPage('app1', 'thin', { limit: 7 });
        for (let i = 0; i < 300; i++) if (i % 6 !== 0) await store.leaveRoom('app1', 'thin', `u${i}`, `p${i}`);
        const rest = Array.from({ length: 50 }, (_, i) => `u${i * 6}`);
        expect(await walk(store, 'thin', 7)).toEqual(rest);
        // A cursor given before the leaves goes on where it was.
        const next = await store.memberPage('app1', 'thin', { after: first.cursor as string, limit: 3 });
        expect(next.members.map((m) => m.user)).toEqual(['u12', 'u18', 'u24']);
        expect(next.count).toBe(50);
      });

      it("numbers a room's member changes with a rising sequence, over every node, and on after it emptied", async () => {
        const { store, peer } = await makeBoth();
        const before = await store.memberCount('app1', 'seq');
        expect(await store.joinRoom('app1', 'seq', { user: 'ann' }, 'p1')).toBe(true);
        const one = await peer.memberCount('app1', 'seq');
        expect(one.count).toBe(1);
        expect(one.seq).toBeGreaterThan(before.seq);
        // A second page of ann changes no member: the sequence stays.
        await peer.joinRoom('app1', 'seq', { user: 'ann' }, 'p2');
        expect((await store.memberCount('app1', 'seq')).seq).toBe(one.seq);
        // Another room's changes may be numbered apart (a store spread over shards numbers per room).
        await peer.joinRoom('app1', 'other', { user: 'bob' }, 'p3');
        expect((await store.memberCount('app1', 'seq')).seq).toBeGreaterThanOrEqual(one.seq);
        await peer.joinRoom('app1', 'seq', { user: 'bob' }, 'p4');
        const two = await store.memberCount('app1', 'seq');
        expect(two).toMatchObject({ count: 2 });
        expect(two.seq).toBeGreaterThan(one.seq);
        await store.leaveRoom('app1', 'seq', 'ann', 'p1');
        await store.leaveRoom('app1', 'seq', 'ann', 'p2');
        await peer.leaveRoom('app1', 'seq', 'bob', 'p4');
        const three = await peer.memberPage('app1', 'seq', { limit: 5 });
        expect(three).toMatchObject({ count: 0, members: [] });
        expect(three.seq).toBeGreaterThan(two.seq);
        // Emptied and joined again: still above every number the room gave before.
        await store.joinRoom('app1', 'seq', { user: 'cy' }, 'p5');
        const four = await peer.memberCount('app1', 'seq');
        expect(four.count).toBe(1);
        expect(four.seq).toBeGreaterThan(three.seq);
      });
    });

    describe('listings of an app', () => {
      /** Names in code point order (UTF-8 byte order), where UTF-16 order would differ: '🚀' > 'ﬁ'. */
      const ordered = ['Ann', 'ann', 'bob', 'cy 🚀', 'é', 'ﬁ', '🚀'];

      it('lists nobody and no room at first', async () => {
        const store = await make();
        expect(await store.onlineUsers('app1', { limit: 10 })).toEqual({ users: [], more: false });
        expect(await store.occupiedRooms('app1', { limit: 10 })).toEqual({ rooms: [], more: false });
      });

      it('lists users with a page open on any node, by name, with their pages, until their last page closes', async () => {
        const { store, peer } = await makeBoth();
        for (const [i, user] of [...ordered].reverse().entries()) {
          await store.pageOpened('app1', user, `a${i}`, T0);
          if (i % 2 === 0) await peer.pageOpened('app1', user, `b${i}`, T0);
        }
        await store.pageOpened('app2', 'zed', 'c1', T0);
        const all = await peer.onlineUsers('app1', { limit: 100 });
        expect(all.more).toBe(false);
        expect(all.users.map((u) => u.user)).toEqual(ordered);
        // Reversed above: index i of `ordered` was opened as 6 - i, with a second page when that is even.
        expect(all.users.map((u) => u.pages)).toEqual(ordered.map((_, i) => ((6 - i) % 2 === 0 ? 2 : 1)));
        expect(await store.onlineUsers('app2', { limit: 100 })).toEqual({
          users: [{ user: 'zed', pages: 1 }],
          more: false,
        });

        // 'bob' was opened as i = 4 (two pages): one close leaves one, the other takes him off at once,
        // though he stays online (webhooks, online) for the offline delay.
        await store.pageClosed('app1', 'bob', 'a4', T0);
        expect((await store.onlineUsers('app1', { limit: 100 })).users).toContainEqual({ user: 'bob', pages: 1 });
        await peer.pageClosed('app1', 'bob', 'b4', T0);
        const after = await store.onlineUsers('app1', { limit: 100 });
        expect(after.users.map((u) => u.user)).toEqual(ordered.filter((u) => u !== 'bob'));
        expect(await store.online('app1', ['bob'], T0 + 1)).toEqual([true]);
        // Back: listed again.
        await peer.pageOpened('app1', 'bob', 'b9', T0 + 2);
        expect((await store.onlineUsers('app1', { limit: 100 })).users).toContainEqual({ user: 'bob', pages: 1 });
      });

      it('lists rooms with a page in them on any node, by name, with pages and presence members', async () => {
        const { store, peer } = await makeBoth();
        for (const [i, room] of [...ordered].reverse().entries()) await store.enterRoom('app1', room, `a${i}`);
        await peer.enterRoom('app1', 'bob', 'b1');
        await peer.enterRoom('app1', 'bob', 'b2');
        await store.joinRoom('app1', 'bob', { user: 'u1' }, 'b1');
        await store.joinRoom('app1', 'bob', { user: 'u1' }, 'b2');
        await peer.joinRoom('app1', 'bob', { user: 'u2', info: { x: 1 } }, 'a4');
        await store.enterRoom('app2', 'other', 'c1');
        const all = await peer.occupiedRooms('app1', { limit: 100 });
        expect(all.more).toBe(false);
        expect(all.rooms.map((r) => r.room)).toEqual(ordered);
        expect(all.rooms.find((r) => r.room === 'bob')).toEqual({ room: 'bob', pages: 3, members: 2 });
        expect(all.rooms.find((r) => r.room === 'ann')).toEqual({ room: 'ann', pages: 1, members: 0 });
        expect(await store.occupiedRooms('app2', { limit: 100 })).toEqual({
          rooms: [{ room: 'other', pages: 1, members: 0 }],
          more: false,
        });

        await store.leaveRoom('app1', 'bob', 'u1', 'b1');
        await store.exitRoom('app1', 'bob', 'b1');
        expect((await store.occupiedRooms('app1', { limit: 100 })).rooms).toContainEqual({
          room: 'bob',
          pages: 2,
          members: 2,
        });
        await store.leaveRoom('app1', 'bob', 'u1', 'b2');
        await store.exitRoom('app1', 'bob', 'b2');
        await peer.leaveRoom('app1', 'bob', 'u2', 'a4');
        expect((await store.occupiedRooms('app1', { limit: 100 })).rooms).toContainEqual({
          room: 'bob',
          pages: 1,
          members: 0,
        });
        expect(await peer.exitRoom('app1', 'bob', 'a4')).toBe(true);
        const after = await store.occupiedRooms('app1', { limit: 100 });
        expect(after.rooms.map((r) => r.room)).toEqual(ordered.filter((r) => r !== 'bob'));
      });

      it('answers the first `limit` names, whether more follow, and the names after one or with a prefix', async () => {
        const store = await make();
        const users = Array.from({ length: 25 }, (_, i) => `user-${String(i).padStart(2, '0')}`);
        for (const user of [...users].reverse()) {
          await store.pageOpened('app1', user, `p-${user}`, T0);
          await store.enterRoom('app1', `room-${user}`, `p-${user}`);
        }
        await store.pageOpened('app1', 'other', 'p-other', T0);

        const first = await store.onlineUsers('app1', { limit: 10 });
        expect(first.users.map((u) => u.user)).toEqual(['other', ...users.slice(0, 9)]);
        expect(first.more).toBe(true);
        // Walking on with `after` gives each name once.
        const seen: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await store.onlineUsers('app1', { limit: 7, ...(after === undefined ? {} : { after }) });
          seen.push(...page.users.map((u) => u.user));
          after = page.users.at(-1)?.user;
          if (!page.more) break;
        }
        expect(seen).toEqual(['other', ...users]);
        // Exactly `limit` there: no more.
        expect((await store.onlineUsers('app1', { limit: 26 })).more).toBe(false);
        expect((await store.onlineUsers('app1', { limit: 25 })).more).toBe(true);

        const prefixed = await store.onlineUsers('app1', { limit: 5, prefix: 'user-1' });
        expect(prefixed.users.map((u) => u.user)).toEqual(users.slice(10, 15));
        expect(prefixed.more).toBe(true);
        const rest = await store.onlineUsers('app1', { limit: 5, prefix: 'user-1', after: 'user-14' });
        expect(rest).toEqual({ users: users.slice(15, 20).map((user) => ({ user, pages: 1 })), more: false });
        // An `after` before the prefix starts at the prefix; one past it finds nothing.
        expect((await store.onlineUsers('app1', { limit: 2, prefix: 'user-2', after: 'a' })).users).toEqual([
          { user: 'user-20', pages: 1 },
          { user: 'user-21', pages: 1 },
        ]);
        expect(await store.onlineUsers('app1', { limit: 2, prefix: 'user-2', after: 'zzz' })).toEqual({
          users: [],
          more: false,
        });
        expect(await store.onlineUsers('app1', { limit: 2, prefix: 'nobody' })).toEqual({ users: [], more: false });

        const rooms = await store.occupiedRooms('app1', { limit: 3, prefix: 'room-user-2', after: 'room-user-21' });
        expect(rooms).toEqual({
          rooms: ['room-user-22', 'room-user-23', 'room-user-24'].map((room) => ({ room, pages: 1, members: 0 })),
          more: false,
        });
        expect((await store.occupiedRooms('app1', { limit: 24 })).more).toBe(true);
      });
    });

    describe('pages closed later', () => {
      const ann: Member = { user: 'ann', info: { name: 'Ann' } };
      const bob: Member = { user: 'bob' };
      const texts = (departures: readonly Departure[]) => departures.map((d) => JSON.stringify(d)).sort();

      it("lists a node's pages that hold something, until their closes are written", async () => {
        const { store, peer } = await makeBoth();
        await store.pageOpened('app1', 'ann', 'na.1', T0);
        await store.enterRoom('app1', 'lobby', 'na.2');
        await store.joinRoom('app1', 'stage', bob, 'na.3');
        await peer.pageOpened('app1', 'bob', 'nb.1', T0);
        expect((await peer.nodePages('na')).sort()).toEqual(['na.1', 'na.2', 'na.3']);
        expect(await store.nodePages('nb')).toEqual(['nb.1']);
        expect(await store.nodePages('nc')).toEqual([]);
        await store.pageClosed('app1', 'ann', 'na.1', T0);
        await store.exitRoom('app1', 'lobby', 'na.2');
        await store.leaveRoom('app1', 'stage', 'bob', 'na.3');
        expect(await peer.nodePages('na')).toEqual([]);
      });

      it('closes pages whose closes were never written, as their closes would, and answers each departure once', async () => {
        const { store, peer } = await makeBoth();
        // ann's page na.1 closed without a trace; bob stays in lobby on another node.
        await store.pageOpened('app1', 'ann', 'na.1', T0);
        await store.enterRoom('app1', 'lobby', 'na.1');
        await store.joinRoom('app1', 'lobby', ann, 'na.1');
        await store.enterRoom('app1', 'solo', 'na.1');
        await store.joinRoom('app1', 'solo', ann, 'na.1');
        // Half of a close was written: it is not answered again.
        expect(await store.leaveRoom('app1', 'solo', 'ann', 'na.1')).toBe(true);
        await peer.pageOpened('app1', 'bob', 'nb.1', T0);
        await peer.enterRoom('app1', 'lobby', 'nb.1');
        await peer.joinRoom('app1', 'lobby', bob, 'nb.1');

        const now = T0 + 1000;
        const answers = await Promise.all([
          store.closePages(['na.1', 'na.9'], now),
          peer.closePages(['na.1'], now),
          store.closePages([], now),
        ]);
        const closed = answers.flat();
        expect(texts(closed)).toEqual(
          texts([
            { type: 'member.left', app: 'app1', room: 'lobby', member: ann },
            { type: 'room.vacated', app: 'app1', room: 'solo' },
          ]),
        );
        expect(await peer.members('app1', 'lobby')).toEqual([bob]);
        expect(await peer.nodePages('na')).toEqual([]);
        expect(await store.onlineUsers('app1', { limit: 10 })).toEqual({
          users: [{ user: 'bob', pages: 1 }],
          more: false,
        });
        expect(await store.occupiedRooms('app1', { limit: 10 })).toEqual({
          rooms: [{ room: 'lobby', pages: 1, members: 1 }],
          more: false,
        });
        // ann goes offline after the delay from the close, once.
        expect(await store.online('app1', ['ann'], now + DELAY - 1)).toEqual([true]);
        expect(names(await peer.takeOffline(now + DELAY, 10))).toEqual(['app1/ann']);
        expect(await store.takeOffline(now + DELAY, 10)).toEqual([]);
        // Closed again (its own close coming late, or another retry): nothing more ends.
        expect(await store.closePages(['na.1'], now + 1)).toEqual([]);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'na.1')).toBe(false);
        expect(await store.exitRoom('app1', 'lobby', 'na.1')).toBe(false);
        expect(await peer.exitRoom('app1', 'lobby', 'nb.1')).toBe(true);
      });
    });

    sweepTests();
  });

  /** The sweep of a dead node's pages (page ids are `<node>.<n>`), claimed from the NodeStore. */
  function sweepTests(): void {
    describe('sweeps of dead nodes', () => {
      const ann: Member = { user: 'ann', info: { name: 'Ann ü', tags: ['a', 1, null] } };
      const bob: Member = { user: 'bob', info: { n: 2 } };
      const cy: Member = { user: 'cy 🚀' };
      const open: PresenceHarness[] = [];

      afterEach(async () => {
        for (const harness of open.splice(0)) await harness.cleanup();
      });

      async function makeBoth(): Promise<{ store: PresenceStore; peer: PresenceStore }> {
        const harness = await makeStore({ offlineDelayMs: DELAY });
        open.push(harness);
        return { store: harness.store, peer: harness.peer ?? harness.store };
      }

      /** Every user due at `nowMs`, claimed in one go. */
      const due = async (store: PresenceStore, nowMs: number) => names(await store.takeOffline(nowMs, 10_000));

      /** Departures as sorted JSON texts: a sweep promises no order between rooms. */
      const texts = (departures: readonly Departure[]) => departures.map((d) => JSON.stringify(d)).sort();

      /** Sweeps the claimed node chunk by chunk until it is done, as the node registry does. */
      async function sweepAll(store: PresenceStore, claim: NodeClaim, nowMs: number, limit = 100) {
        const departures: Departure[] = [];
        for (let n = 0; n < 10_000; n++) {
          const chunk = await store.sweepNode(claim, nowMs, limit);
          departures.push(...chunk.departures);
          if (chunk.done) return departures;
        }
        throw new Error('the sweep never ended');
      }

      /** A page of `user` that is online, seated in `rooms` and a member of `presence` rooms. */
      async function openPage(
        store: PresenceStore,
        page: string,
        member: Member,
        rooms: readonly string[],
        presence: readonly string[],
      ): Promise<void> {
        await store.pageOpened('app1', member.user, page, T0);
        for (const room of rooms) await store.enterRoom('app1', room, page);
        for (const room of presence) await store.joinRoom('app1', room, member, page);
      }

      it('takes out the pages of a dead node, as their closes would, and answers what that ended', async () => {
        const { store, peer } = await makeBoth();
        await openPage(store, 'na.1', ann, ['lobby'], ['lobby']);
        await openPage(store, 'na.2', bob, ['lobby', 'solo'], ['lobby', 'solo']);
        await openPage(peer, 'nb.1', ann, ['lobby'], ['lobby']);
        await openPage(peer, 'nb.2', cy, [], ['lobby']);

        const now = T0 + 15_000;
        const swept = await sweepAll(peer, { node: 'na', lapse: 1 }, now);
        expect(texts(swept)).toEqual(
          texts([
            { type: 'member.left', app: 'app1', room: 'lobby', member: bob },
            { type: 'member.left', app: 'app1', room: 'solo', member: bob },
            { type: 'room.vacated', app: 'app1', room: 'solo' },
          ]),
        );
        // In one room, the member leaves before the room is vacated, as with a close.
        const solo = swept.filter((d) => d.room === 'solo').map((d) => d.type);
        expect(solo).toEqual(['member.left', 'room.vacated']);
        expect(await store.sweepNode({ node: 'na', lapse: 1 }, now, 100)).toEqual({ departures: [], done: true });

        // Ann keeps her page on the other node; bob is due offline after the delay, from the sweep.
        expect(await store.members('app1', 'lobby')).toEqual([ann, cy]);
        expect(await store.members('app1', 'solo')).toEqual([]);
        expect(await store.online('app1', ['ann', 'bob'], now + DELAY - 1)).toEqual([true, true]);
        expect(await store.online('app1', ['ann', 'bob'], now + DELAY)).toEqual([true, false]);
        expect(await due(store, now + DELAY - 1)).toEqual([]);
        expect(await due(peer, now + DELAY)).toEqual(['app1/bob']);

        // The swept pages' own closes, should they still come, end nothing more.
        expect(await store.leaveRoom('app1', 'lobby', 'bob', 'na.2')).toBe(false);
        expect(await store.leaveRoom('app1', 'lobby', 'ann', 'na.1')).toBe(false);
        expect(await store.exitRoom('app1', 'solo', 'na.2')).toBe(false);
        await store.pageClosed('app1', 'bob', 'na.2', now + DELAY);
        await store.pageClosed('app1', 'ann', 'na.1', now + DELAY);
        expect(await due(store, now + 10 * DELAY)).toEqual([]);
        expect(await store.enterRoom('app1', 'solo', 'nb.3')).toBe(true);
        // The other node's pages are still counted.
        expect(await peer.leaveRoom('app1', 'lobby', 'ann', 'nb.1')).toBe(true);
        expect(await peer.exitRoom('app1', 'lobby', 'nb.1')).toBe(true);
      });

      it('takes the pages of a dead node out of the listings', async () => {
        const { store, peer } = await makeBoth();
        await openPage(store, 'na.1', ann, ['lobby', 'solo'], ['lobby']);
        await openPage(store, 'na.2', bob, ['lobby'], []);
        await openPage(peer, 'nb.1', bob, ['lobby'], ['lobby']);
        expect(await peer.onlineUsers('app1', { limit: 10 })).toEqual({
          users: [
            { user: 'ann', pages: 1 },
            { user: 'bob', pages: 2 },
          ],
          more: false,
        });
        await sweepAll(peer, { node: 'na', lapse: 1 }, T0 + 15_000);
        expect(await store.onlineUsers('app1', { limit: 10 })).toEqual({
          users: [{ user: 'bob', pages: 1 }],
          more: false,
        });
        expect(await store.occupiedRooms('app1', { limit: 10 })).toEqual({
          rooms: [{ room: 'lobby', pages: 1, members: 1 }],
          more: false,
        });
      });

      it('answers each departure once, however many sweep the same node at once on two nodes', async () => {
        const { store, peer } = await makeBoth();
        const expected: Departure[] = [];
        for (let i = 0; i < 40; i++) {
          const member: Member = { user: `u${i % 10}`, info: { i } };
          const node = i % 2 ? 'na' : 'nc';
          await openPage(store, `${node}.${i}`, member, [`room-${i}`], [`room-${i}`]);
          expected.push({ type: 'member.left', app: 'app1', room: `room-${i}`, member });
          expected.push({ type: 'room.vacated', app: 'app1', room: `room-${i}` });
        }
        const now = T0 + 15_000;
        // A sweeper whose claim ended while it swept, and the one that claimed the node after it.
        const answers = await Promise.all([
          sweepAll(store, { node: 'na', lapse: 1 }, now, 3),
          sweepAll(peer, { node: 'na', lapse: 1 }, now, 4),
          sweepAll(store, { node: 'nc', lapse: 2 }, now, 5),
          sweepAll(peer, { node: 'nc', lapse: 2 }, now, 2),
        ]);
        expect(texts(answers.flat())).toEqual(texts(expected));
        expect(await due(store, now + DELAY)).toEqual(Array.from({ length: 10 }, (_, i) => `app1/u${i}`).sort());
      });

      it('takes at most `limit` pages a sweep, the rest later, and says when the node has none left', async () => {
        const { store, peer } = await makeBoth();
        for (let i = 0; i < 5; i++) await openPage(store, `na.${i}`, { user: `u${i}` }, [`r${i}`], []);
        const claim = { node: 'na', lapse: 1 };
        const sizes: number[] = [];
        for (let n = 0; n < 5; n++) {
          const chunk = await peer.sweepNode(claim, T0 + 15_000, 2);
          sizes.push(chunk.departures.length);
          if (chunk.done) break;
        }
        expect(sizes).toEqual([2, 2, 1]);
        expect(await store.sweepNode({ node: 'nz', lapse: 2 }, T0 + 15_000, 2)).toEqual({ departures: [], done: true });
      });

      it('sweeps a node with many pages to the last one', async () => {
        const { store, peer } = await makeBoth();
        const users = 600;
        for (let i = 0; i < users; i++) {
          await openPage(store, `na.${i}`, { user: `u${i}` }, ['lobby', `own-${i}`], ['lobby']);
        }
        expect(await store.members('app1', 'lobby')).toHaveLength(users);
        const swept = await sweepAll(peer, { node: 'na', lapse: 1 }, T0 + 15_000);
        expect(swept.filter((d) => d.type === 'member.left')).toHaveLength(users);
        expect(swept.filter((d) => d.type === 'room.vacated')).toHaveLength(users + 1);
        expect(new Set(texts(swept)).size).toBe(swept.length);
        expect(await store.members('app1', 'lobby')).toEqual([]);
        expect(await store.enterRoom('app1', 'lobby', 'nb.1')).toBe(true);
        expect(await due(store, T0 + 15_000 + DELAY)).toHaveLength(users);
      });

      it('keeps what a node opens after its sweep began (it was alive after all) until its next lapse', async () => {
        const { store, peer } = await makeBoth();
        await openPage(store, 'na.1', ann, ['lobby'], ['lobby']);
        await openPage(store, 'na.2', cy, ['side'], []);
        const swept = T0 + 15_000;
        const first = { node: 'na', lapse: 3 };
        const taken = await peer.sweepNode(first, swept, 1);
        expect(taken.done).toBe(false);
        // It renews and opens more while its first lapse is swept, by this sweeper or the next.
        expect(await store.pageOpened('app1', 'bob', 'na.3', swept + 1)).toBe(true);
        expect(await store.enterRoom('app1', 'hall', 'na.3')).toBe(true);
        expect(await store.joinRoom('app1', 'hall', bob, 'na.3')).toBe(true);
        const rest = await sweepAll(peer, first, swept + 2);
        expect(texts([...taken.departures, ...rest])).toEqual(
          texts([
            { type: 'member.left', app: 'app1', room: 'lobby', member: ann },
            { type: 'room.vacated', app: 'app1', room: 'lobby' },
            { type: 'room.vacated', app: 'app1', room: 'side' },
          ]),
        );
        expect(await sweepAll(store, first, swept + 3)).toEqual([]);
        expect(await peer.members('app1', 'hall')).toEqual([bob]);
        expect(await peer.online('app1', ['ann', 'bob'], swept + 3 + DELAY)).toEqual([false, true]);
        // Its next lapse takes what it opened since.
        expect(texts(await sweepAll(peer, { node: 'na', lapse: 4 }, swept + 15_000))).toEqual(
          texts([
            { type: 'member.left', app: 'app1', room: 'hall', member: bob },
            { type: 'room.vacated', app: 'app1', room: 'hall' },
          ]),
        );
      });
    });
  }
}
