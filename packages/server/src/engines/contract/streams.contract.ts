/**
 * The StreamStore contract as one test suite, run by every engine's runner file.
 * Time is never read from the clock: every call gets its times, so the suite moves time by hand.
 *
 * Every change (join, leave, goLive, stopLive, takeNode) must reach exactly one caller, a stream
 * never has two presenters nor more than `max` pages, and while live each signed-in member has one
 * open watch; with a `peer` (a second store on the same backend, as on another node) the suite races
 * both against each other. Stores, clock and racing helpers: ./harness.ts.
 *
 * @example
 * ```ts
 * streamStoreContract('MemoryStreamStore', inProcess(() => new MemoryStreamStore()));
 * ```
 */
import { describe, expect, it } from 'vitest';
import type {
  LapsedStreamMember,
  StreamChange,
  StreamMember,
  StreamStore,
  StreamWatch,
  StreamWatchEnd,
} from '../types.js';
import { drain, freshStores, type MakeStores, race, raceEach, T0 } from './harness.js';

const MAX = 8;

/** Pages (a page's node is its id up to the first '.'), each a member of one role. */
const presenter = (page: string, user = `user-${page}`): StreamMember => ({ page, user, role: 'presenter' });
const viewer = (page: string, user = `user-${page}`): StreamMember => ({ page, user, role: 'viewer' });
const visitor = (page: string, role: StreamMember['role'] = 'viewer'): StreamMember => ({ page, role });

const pages = (members: readonly StreamMember[]) => members.map((m) => m.page);
const none = (): StreamChange => ({ joined: [], left: [] });

/** Lapsed members as `app/stream/page`, sorted: takeNode promises no order. */
const names = (lapsed: readonly LapsedStreamMember[]) =>
  lapsed.map(({ app, stream, member }) => `${app}/${stream}/${member.page}`).sort();

/** A watch as it closes at `leftAt`. */
const closed = (watch: StreamWatch | undefined, leftAt: number): StreamWatchEnd => ({
  ...(watch as StreamWatch),
  leftAt,
});

/** The change of a join that was let in (fails the test otherwise). */
function joinedChange(outcome: Awaited<ReturnType<StreamStore['join']>>): StreamChange {
  if (typeof outcome === 'string') throw new Error(`join answered ${outcome}`);
  return outcome.change;
}

/** The change of a call that answered one (fails the test otherwise). */
function changeOf(change: StreamChange | undefined): StreamChange {
  if (!change) throw new Error('no change');
  return change;
}

export function streamStoreContract(name: string, makeStore: MakeStores<StreamStore>): void {
  describe(`StreamStore contract: ${name}`, () => {
    const fresh = freshStores(makeStore);

    describe('join', () => {
      it('puts pages on in the order they came; while not live it opens no watch', async () => {
        const { store, peer } = await fresh.nodes();
        // A stream's name is the customer's: any text.
        const stream = 'Launch: day 1 → all {hands}';
        const bob = viewer('na.1', 'bob:1');
        const pat = presenter('nb.2', 'pat.ü');
        const guest = visitor('na.3');
        const cat = viewer('nb.4', 'cat');
        expect(await store.join('app1', stream, bob, MAX, T0)).toStrictEqual({ state: {}, change: none() });
        expect(await peer.join('app1', stream, pat, MAX, T0 + 1)).toStrictEqual({
          state: { presenter: 'nb.2' },
          change: none(),
        });
        expect(await store.join('app1', stream, guest, MAX, T0 + 2)).toStrictEqual({
          state: { presenter: 'nb.2' },
          change: none(),
        });
        expect(await peer.join('app1', stream, cat, MAX, T0 + 3)).toStrictEqual({
          state: { presenter: 'nb.2' },
          change: none(),
        });
        for (const s of [store, peer]) {
          expect(await s.members('app1', stream)).toStrictEqual([bob, pat, guest, cat]);
          expect(await s.state('app1', stream)).toStrictEqual({ presenter: 'nb.2' });
        }
        expect(await store.members('app1', 'no-such-stream')).toStrictEqual([]);
        expect(await store.state('app1', 'no-such-stream')).toStrictEqual({});
      });

      it('keeps its own copy: changing a member given or answered changes nothing stored', async () => {
        const store = await fresh.store();
        const bob = viewer('na.1', 'bob');
        await store.join('app1', 's', bob, MAX, T0);
        bob.user = 'changed';
        bob.role = 'presenter';
        const [got] = await store.members('app1', 's');
        expect(got).toStrictEqual(viewer('na.1', 'bob'));
        if (got) got.user = 'changed too';
        expect(await store.members('app1', 's')).toStrictEqual([viewer('na.1', 'bob')]);
        expect(await store.state('app1', 's')).toStrictEqual({});
      });

      it('lets one page present: another presenter is turned away with taken, and stored nowhere', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', presenter('na.1', 'pat'), MAX, T0);
        expect(await peer.join('app1', 's', presenter('nb.2', 'sam'), MAX, T0)).toBe('taken');
        // A visitor cannot present beside one either.
        expect(await store.join('app1', 's', visitor('na.3', 'presenter'), MAX, T0)).toBe('taken');
        // Viewers are welcome.
        expect(await peer.join('app1', 's', viewer('nb.4'), MAX, T0)).not.toBeTypeOf('string');
        expect(pages(await store.members('app1', 's'))).toEqual(['na.1', 'nb.4']);
        expect(await peer.leave('app1', 's', 'nb.2', T0)).toBeUndefined();
        // Once the presenter is gone, another may present.
        expect((await store.leave('app1', 's', 'na.1', T0 + 1))?.member).toStrictEqual(presenter('na.1', 'pat'));
        expect(await store.state('app1', 's')).toStrictEqual({});
        expect(await peer.join('app1', 's', presenter('nb.2', 'sam'), MAX, T0 + 2)).toStrictEqual({
          state: { presenter: 'nb.2' },
          change: none(),
        });
        expect(pages(await store.members('app1', 's'))).toEqual(['nb.4', 'nb.2']);
      });

      it('answers full when the stream holds max pages, and stores nothing', async () => {
        const { store, peer } = await fresh.nodes();
        const three = [presenter('na.1'), viewer('nb.2'), visitor('na.3')];
        for (const m of three) expect(await store.join('app1', 's', m, 3, T0)).not.toBeTypeOf('string');
        expect(await peer.join('app1', 's', viewer('nb.4'), 3, T0)).toBe('full');
        expect(await store.join('app1', 's', visitor('na.5'), 3, T0)).toBe('full');
        expect(await store.members('app1', 's')).toStrictEqual(three);
        expect(await peer.leave('app1', 's', 'nb.4', T0)).toBeUndefined();
        // A seat freed is a seat to take.
        await store.leave('app1', 's', 'nb.2', T0);
        expect(await peer.join('app1', 's', viewer('nb.4'), 3, T0)).not.toBeTypeOf('string');
        expect(await store.join('app1', 's', viewer('na.5'), 3, T0)).toBe('full');
        // A presenter counts as a page too: max 1 holds the presenter alone.
        expect(await store.join('app1', 'solo', presenter('na.1'), 1, T0)).not.toBeTypeOf('string');
        expect(await store.join('app1', 'solo', viewer('na.2'), 1, T0)).toBe('full');
        expect(await store.join('app1', 'empty', viewer('na.2'), 0, T0)).toBe('full');
      });

      it('answers already for a page on the stream, in any role, and changes nothing', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', presenter('na.1', 'pat'), 2, T0);
        await peer.join('app1', 's', viewer('nb.2', 'bob'), 2, T0);
        expect(await peer.join('app1', 's', presenter('na.1', 'other'), MAX, T0)).toBe('already');
        expect(await peer.join('app1', 's', viewer('na.1', 'pat'), MAX, T0)).toBe('already');
        // At max, and with a presenter, a page on it is there already rather than turned away.
        expect(await store.join('app1', 's', presenter('nb.2', 'bob'), 2, T0)).toBe('already');
        expect(await store.members('app1', 's')).toStrictEqual([presenter('na.1', 'pat'), viewer('nb.2', 'bob')]);
        expect(await store.state('app1', 's')).toStrictEqual({ presenter: 'na.1' });
      });

      it('lets one of many racing presenters from two nodes present', async () => {
        const { store, peer, node } = await fresh.nodes();
        await store.join('app1', 's', viewer('na.0'), MAX, T0);
        const racing = Array.from({ length: 10 }, (_, i) => presenter(`${i % 2 ? 'nb' : 'na'}.${i + 1}`));
        const outcomes = await raceEach(node, racing, (s, m) => s.join('app1', 's', m, MAX, T0));
        const winners = racing.filter((_, i) => typeof outcomes[i] !== 'string');
        expect(winners).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'taken')).toHaveLength(9);
        expect(await peer.state('app1', 's')).toStrictEqual({ presenter: winners[0]?.page });
        expect(await store.members('app1', 's')).toStrictEqual([viewer('na.0'), winners[0]]);
      });

      it('never lets racing joins from two nodes pass max, and lets one of a page’s racing joins in', async () => {
        const { store, node } = await fresh.nodes();
        for (let round = 0; round < 4; round++) {
          const stream = `s${round}`;
          const max = 2 + round;
          const joining = Array.from({ length: 12 }, (_, i) => viewer(`${i % 2 ? 'nb' : 'na'}.${i}`));
          const outcomes = await raceEach(node, joining, (s, m) => s.join('app1', stream, m, max, T0));
          expect(outcomes.filter((o) => typeof o !== 'string')).toHaveLength(max);
          expect(outcomes.filter((o) => o === 'full')).toHaveLength(12 - max);
          const winners = joining.filter((_, i) => typeof outcomes[i] !== 'string');
          expect(pages(await store.members('app1', stream)).sort()).toEqual(pages(winners).sort());
        }
        const same = await race(node, 10, (s) => s.join('app1', 'one', viewer('na.1'), MAX, T0));
        expect(same.filter((o) => typeof o !== 'string')).toHaveLength(1);
        expect(same.filter((o) => o === 'already')).toHaveLength(9);
      });
    });

    describe('going live', () => {
      it('opens a watch per signed-in member, presenter included, in join order; never one for a visitor', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', viewer('na.1', 'ann'), MAX, T0);
        await peer.join('app1', 's', visitor('nb.2'), MAX, T0);
        await peer.join('app1', 's', presenter('nb.3', 'pat'), MAX, T0);
        await store.join('app1', 's', viewer('na.4', 'bob'), MAX, T0);
        const live = changeOf(await peer.goLive('app1', 's', 'nb.3', 'run1', T0 + 10));
        expect(live).toStrictEqual({
          live: T0 + 10,
          joined: [
            { watch: live.joined[0]?.watch, user: 'ann', role: 'viewer', joinedAt: T0 + 10 },
            { watch: live.joined[1]?.watch, user: 'pat', role: 'presenter', joinedAt: T0 + 10 },
            { watch: live.joined[2]?.watch, user: 'bob', role: 'viewer', joinedAt: T0 + 10 },
          ],
          left: [],
        });
        const ids = live.joined.map((w) => w.watch);
        for (const id of ids) expect(id).toMatch(/^run1\.\d+$/);
        expect(new Set(ids).size).toBe(3);
        for (const s of [store, peer]) {
          expect(await s.state('app1', 's')).toStrictEqual({ presenter: 'nb.3', liveSince: T0 + 10 });
        }
        // Members do not change by going live.
        expect(pages(await store.members('app1', 's'))).toEqual(['na.1', 'nb.2', 'nb.3', 'na.4']);
      });

      it('opens a watch for a signed-in page that joins while live, none for a visitor; leaving closes it', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', presenter('na.1', 'pat'), MAX, T0);
        const live = changeOf(await store.goLive('app1', 's', 'na.1', 'r', T0 + 1));
        const joined = await peer.join('app1', 's', viewer('nb.2', 'bob'), MAX, T0 + 5);
        const bobWatch = joinedChange(joined).joined[0];
        expect(joined).toStrictEqual({
          state: { presenter: 'na.1', liveSince: T0 + 1 },
          change: { joined: [{ watch: bobWatch?.watch, user: 'bob', role: 'viewer', joinedAt: T0 + 5 }], left: [] },
        });
        expect(bobWatch?.watch).toMatch(/^r\.\d+$/);
        expect(bobWatch?.watch).not.toBe(live.joined[0]?.watch);
        expect(await store.join('app1', 's', visitor('na.3'), MAX, T0 + 6)).toStrictEqual({
          state: { presenter: 'na.1', liveSince: T0 + 1 },
          change: none(),
        });
        // Leaving closes the watch it opened, at the time given; the run goes on.
        expect(await store.leave('app1', 's', 'nb.2', T0 + 9)).toStrictEqual({
          member: viewer('nb.2', 'bob'),
          change: { joined: [], left: [closed(bobWatch, T0 + 9)] },
        });
        expect(await peer.leave('app1', 's', 'na.3', T0 + 10)).toStrictEqual({
          member: visitor('na.3'),
          change: none(),
        });
        expect(await peer.state('app1', 's')).toStrictEqual({ presenter: 'na.1', liveSince: T0 + 1 });
        // Coming back opens another watch.
        const again = joinedChange(await peer.join('app1', 's', viewer('nb.2', 'bob'), MAX, T0 + 11)).joined[0];
        expect(again?.joinedAt).toBe(T0 + 11);
        expect(new Set([live.joined[0]?.watch, bobWatch?.watch, again?.watch]).size).toBe(3);
      });

      it('lets only the presenter go live, and only while not live', async () => {
        const { store, peer } = await fresh.nodes();
        expect(await store.goLive('app1', 's', 'na.1', 'r', T0)).toBeUndefined();
        await store.join('app1', 's', viewer('na.1'), MAX, T0);
        expect(await store.goLive('app1', 's', 'na.1', 'r', T0)).toBeUndefined();
        expect(await store.stopLive('app1', 's', 'na.1', T0)).toBeUndefined();
        await peer.join('app1', 's', presenter('nb.2'), MAX, T0);
        // A page not on the stream, a viewer, or the presenter of another app's stream: nothing.
        expect(await peer.goLive('app1', 's', 'nb.9', 'r', T0)).toBeUndefined();
        expect(await store.goLive('app1', 's', 'na.1', 'r', T0)).toBeUndefined();
        expect(await peer.goLive('app2', 's', 'nb.2', 'r', T0)).toBeUndefined();
        expect(await peer.stopLive('app1', 's', 'nb.2', T0)).toBeUndefined();
        expect(await store.state('app1', 's')).toStrictEqual({ presenter: 'nb.2' });
        expect(await store.goLive('app1', 's', 'nb.2', 'r', T0 + 1)).toBeDefined();
        // Live already: going live again is nothing, and the run keeps its start.
        expect(await peer.goLive('app1', 's', 'nb.2', 'r2', T0 + 2)).toBeUndefined();
        expect(await store.stopLive('app1', 's', 'na.1', T0 + 3)).toBeUndefined();
        expect(await store.state('app1', 's')).toStrictEqual({ presenter: 'nb.2', liveSince: T0 + 1 });
      });

      it('hands a racing goLive, and a racing stopLive, to exactly one caller', async () => {
        const { store, peer, node } = await fresh.nodes();
        await store.join('app1', 's', presenter('na.1', 'pat'), MAX, T0);
        await peer.join('app1', 's', viewer('nb.2', 'bob'), MAX, T0);
        const lives = await race(node, 8, (s, i) => s.goLive('app1', 's', 'na.1', `r${i}`, T0 + i));
        const started = lives.filter((c) => c !== undefined);
        expect(started).toHaveLength(1);
        expect(started[0]?.joined).toHaveLength(2);
        const stops = await race(node, 8, (s) => s.stopLive('app1', 's', 'na.1', T0 + 20));
        const ended = stops.filter((c) => c !== undefined);
        expect(ended).toHaveLength(1);
        expect(ended[0]?.left.map((w) => w.watch)).toEqual(started[0]?.joined.map((w) => w.watch));
      });
    });

    describe('ending a run', () => {
      it('stopLive closes every watch at its time, in join order; the presenter stays, and a new run has new watches', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', viewer('na.1', 'ann'), MAX, T0);
        await peer.join('app1', 's', presenter('nb.2', 'pat'), MAX, T0);
        await store.join('app1', 's', visitor('na.3'), MAX, T0);
        const first = changeOf(await peer.goLive('app1', 's', 'nb.2', 'run-a', T0 + 10));
        const bob = joinedChange(await store.join('app1', 's', viewer('na.4', 'bob'), MAX, T0 + 20)).joined;
        expect(await peer.stopLive('app1', 's', 'nb.2', T0 + 30)).toStrictEqual({
          ended: { startedAt: T0 + 10, endedAt: T0 + 30 },
          joined: [],
          left: [closed(first.joined[0], T0 + 30), closed(first.joined[1], T0 + 30), closed(bob[0], T0 + 30)],
        });
        for (const s of [store, peer]) expect(await s.state('app1', 's')).toStrictEqual({ presenter: 'nb.2' });
        expect(pages(await store.members('app1', 's'))).toEqual(['na.1', 'nb.2', 'na.3', 'na.4']);
        // Not live: leaving closes nothing.
        expect(await store.leave('app1', 's', 'na.4', T0 + 35)).toStrictEqual({
          member: viewer('na.4', 'bob'),
          change: none(),
        });
        // Live again, under a new run: new watches for everyone signed in.
        const second = changeOf(await store.goLive('app1', 's', 'nb.2', 'run-b', T0 + 40));
        expect(second.live).toBe(T0 + 40);
        expect(second.joined.map((w) => [w.user, w.role, w.joinedAt])).toEqual([
          ['ann', 'viewer', T0 + 40],
          ['pat', 'presenter', T0 + 40],
        ]);
        for (const w of second.joined) expect(w.watch).toMatch(/^run-b\.\d+$/);
        const all = [...first.joined, ...(bob ?? []), ...second.joined].map((w) => w.watch);
        expect(new Set(all).size).toBe(all.length);
        expect(await peer.state('app1', 's')).toStrictEqual({ presenter: 'nb.2', liveSince: T0 + 40 });
      });

      it("the presenter's leave ends the run: every watch closes, the others stay on", async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', viewer('na.1', 'ann'), MAX, T0);
        await peer.join('app1', 's', presenter('nb.2', 'pat'), MAX, T0);
        await store.join('app1', 's', visitor('na.3'), MAX, T0);
        await peer.join('app1', 's', viewer('nb.4', 'bob'), MAX, T0);
        const live = changeOf(await peer.goLive('app1', 's', 'nb.2', 'r', T0 + 10));
        expect(await store.leave('app1', 's', 'nb.2', T0 + 50)).toStrictEqual({
          member: presenter('nb.2', 'pat'),
          change: {
            ended: { startedAt: T0 + 10, endedAt: T0 + 50 },
            joined: [],
            left: live.joined.map((w) => closed(w, T0 + 50)),
          },
        });
        for (const s of [store, peer]) {
          expect(await s.state('app1', 's')).toStrictEqual({});
          expect(pages(await s.members('app1', 's'))).toEqual(['na.1', 'na.3', 'nb.4']);
        }
        // Their watches closed with the run: leaving now closes nothing.
        expect(await peer.leave('app1', 's', 'nb.4', T0 + 60)).toStrictEqual({
          member: viewer('nb.4', 'bob'),
          change: none(),
        });
        // And a presenter leaving while not live ends nothing.
        await peer.join('app1', 's', presenter('nb.5', 'sam'), MAX, T0 + 70);
        expect(await peer.leave('app1', 's', 'nb.5', T0 + 80)).toStrictEqual({
          member: presenter('nb.5', 'sam'),
          change: none(),
        });
      });

      it('a presenter without a user still ends its run, with no watch of its own', async () => {
        const store = await fresh.store();
        await store.join('app1', 's', visitor('na.1', 'presenter'), MAX, T0);
        await store.join('app1', 's', viewer('na.2', 'ann'), MAX, T0);
        const live = changeOf(await store.goLive('app1', 's', 'na.1', 'r', T0 + 1));
        expect(live.joined.map((w) => w.user)).toEqual(['ann']);
        expect(await store.leave('app1', 's', 'na.1', T0 + 2)).toStrictEqual({
          member: visitor('na.1', 'presenter'),
          change: { ended: { startedAt: T0 + 1, endedAt: T0 + 2 }, joined: [], left: [closed(live.joined[0], T0 + 2)] },
        });
      });

      it('hands a leave to exactly one of many racing leaves from two nodes', async () => {
        const { store, peer, node } = await fresh.nodes();
        await store.join('app1', 's', presenter('na.1', 'pat'), MAX, T0);
        const viewers = Array.from({ length: 6 }, (_, i) => viewer(`${i % 2 ? 'nb' : 'na'}.${i + 2}`, `u${i}`));
        for (const m of viewers) await (m.page.startsWith('nb') ? peer : store).join('app1', 's', m, MAX, T0);
        const live = changeOf(await store.goLive('app1', 's', 'na.1', 'r', T0 + 1));
        const leaving = [...viewers, presenter('na.1', 'pat')];
        // Four leaves of each page, two through each node.
        const fourEach = leaving.flatMap((m) => [m.page, m.page, m.page, m.page]);
        const left = await raceEach(node, fourEach, (s, page) => s.leave('app1', 's', page, T0 + 9));
        const answered = left.filter((r) => r !== undefined);
        expect(answered.map((r) => r.member.page).sort()).toEqual(pages(leaving).sort());
        // Each watch closed once, the run ended once.
        const closedWatches = answered.flatMap((r) => r.change.left.map((w) => w.watch));
        expect(closedWatches.sort()).toEqual(live.joined.map((w) => w.watch).sort());
        expect(answered.filter((r) => r.change.ended)).toHaveLength(1);
        expect(await store.members('app1', 's')).toStrictEqual([]);
        expect(await peer.state('app1', 's')).toStrictEqual({});
      });

      it('lets the stream go with its last member: after it the stream is as new', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', presenter('na.1'), 2, T0);
        await peer.join('app1', 's', viewer('nb.2'), 2, T0);
        await store.goLive('app1', 's', 'na.1', 'r', T0 + 1);
        await store.leave('app1', 's', 'nb.2', T0 + 2);
        await peer.leave('app1', 's', 'na.1', T0 + 3);
        for (const s of [store, peer]) {
          expect(await s.members('app1', 's')).toStrictEqual([]);
          expect(await s.state('app1', 's')).toStrictEqual({});
        }
        expect(await peer.join('app1', 's', viewer('nb.3'), 1, T0 + 4)).toStrictEqual({ state: {}, change: none() });
        expect(await store.join('app1', 's', presenter('na.1'), 1, T0 + 5)).toBe('full');
        await peer.leave('app1', 's', 'nb.3', T0 + 6);
        expect(await store.state('app1', 's')).toStrictEqual({});
        expect(await store.members('app1', 's')).toStrictEqual([]);
      });
    });

    describe('takeNode', () => {
      it("takes a dead node's members once, over two nodes; a dead presenter ends the run", async () => {
        const { store, peer } = await fresh.nodes();
        // Stream s: live, a viewer on the dying node. Stream t: live, its presenter on the dying node.
        await store.join('app1', 's', presenter('na.1', 'pat'), MAX, T0);
        await store.join('app1', 's', viewer('nx.1', 'ann'), MAX, T0);
        await peer.join('app1', 's', viewer('nb.1', 'bob'), MAX, T0);
        const s = changeOf(await store.goLive('app1', 's', 'na.1', 'rs', T0 + 1));
        await peer.join('app1', 't', viewer('nb.2', 'cat'), MAX, T0);
        await peer.join('app1', 't', presenter('nx.2', 'sam'), MAX, T0);
        await store.join('app1', 't', visitor('nx.3'), MAX, T0);
        await store.join('app1', 't', viewer('na.2', 'dan'), MAX, T0);
        const t = changeOf(await peer.goLive('app1', 't', 'nx.2', 'rt', T0 + 2));
        expect(await store.takeNode('nz', T0 + 4000, 10)).toEqual([]);
        const now = T0 + 6000;
        const batches = await Promise.all([peer.takeNode('nx', now, 10), store.takeNode('nx', now, 10)]);
        const taken = batches.flat();
        expect(names(taken)).toEqual(['app1/s/nx.1', 'app1/t/nx.2', 'app1/t/nx.3']);
        const of = (page: string) => taken.find((l) => l.member.page === page);
        expect(of('nx.1')).toStrictEqual({
          app: 'app1',
          stream: 's',
          member: viewer('nx.1', 'ann'),
          change: { joined: [], left: [closed(s.joined[1], now)] },
        });
        // The presenter took the run with it (the visitor's own change may come first or after).
        expect(of('nx.2')).toStrictEqual({
          app: 'app1',
          stream: 't',
          member: presenter('nx.2', 'sam'),
          change: { ended: { startedAt: T0 + 2, endedAt: now }, joined: [], left: t.joined.map((w) => closed(w, now)) },
        });
        expect(of('nx.3')).toStrictEqual({ app: 'app1', stream: 't', member: visitor('nx.3'), change: none() });
        expect(await store.takeNode('nx', now, 10)).toEqual([]);
        // The other nodes' members stay; s is live still, t is not.
        expect(pages(await store.members('app1', 's'))).toEqual(['na.1', 'nb.1']);
        expect(await peer.state('app1', 's')).toStrictEqual({ presenter: 'na.1', liveSince: T0 + 1 });
        expect(pages(await peer.members('app1', 't'))).toEqual(['nb.2', 'na.2']);
        expect(await store.state('app1', 't')).toStrictEqual({});
        expect(await store.leave('app1', 's', 'nx.1', now)).toBeUndefined();
      });

      it('takes the stream with its last member', async () => {
        const store = await fresh.store();
        await store.join('app1', 's', presenter('nz.1', 'pat'), MAX, T0);
        const live = changeOf(await store.goLive('app1', 's', 'nz.1', 'r', T0 + 1));
        expect(await store.takeNode('nz', T0 + 2, 10)).toStrictEqual([
          {
            app: 'app1',
            stream: 's',
            member: presenter('nz.1', 'pat'),
            change: {
              ended: { startedAt: T0 + 1, endedAt: T0 + 2 },
              joined: [],
              left: [closed(live.joined[0], T0 + 2)],
            },
          },
        ]);
        expect(await store.members('app1', 's')).toStrictEqual([]);
        expect(await store.state('app1', 's')).toStrictEqual({});
      });

      it('takes nothing of members that left', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 's', viewer('nx.1'), MAX, T0);
        await store.join('app1', 's', viewer('nx.2'), MAX, T0);
        await store.leave('app1', 's', 'nx.1', T0 + 11_000);
        expect(names(await peer.takeNode('nx', T0 + 50_000, 10))).toEqual(['app1/s/nx.2']);
        expect(await store.takeNode('nx', T0 + 50_000, 10)).toEqual([]);
      });

      it('takes at most `limit` members a time, the rest later', async () => {
        const store = await fresh.store();
        const due: string[] = [];
        for (let i = 0; i < 7; i++) {
          const page = `${i % 3 ? 'nx' : 'ny'}.${i}`;
          const stream = `s${i % 2}`;
          await store.join('app1', stream, viewer(page), MAX, T0);
          await store.join('app1', stream, viewer(`na.${i}`), MAX, T0);
          due.push(`app1/${stream}/${page}`);
        }
        const now = T0 + 10_000;
        expect(await store.takeNode('nx', now, 0)).toEqual([]);
        const taken: LapsedStreamMember[] = [];
        for (const [node, sizes] of [
          ['nx', [2, 2, 0]],
          ['ny', [2, 1, 0]],
        ] as const) {
          for (const size of sizes) {
            const batch = await store.takeNode(node, now, 2);
            expect(batch).toHaveLength(size);
            taken.push(...batch);
          }
        }
        expect(names(taken)).toEqual(due.sort());
      });

      it('hands each lapsed member and each watch to exactly one of many racing takers and leaves', async () => {
        const { store, peer, node } = await fresh.nodes();
        const dead: string[] = [];
        const opened: string[] = [];
        for (let k = 0; k < 4; k++) {
          const stream = `s${k}`;
          // Presenters on the dying node in half the streams.
          const host = k % 2 ? presenter(`nx.p${k}`, `p${k}`) : presenter(`na.p${k}`, `p${k}`);
          await store.join('app1', stream, host, 100, T0);
          if (k % 2) dead.push(`app1/${stream}/${host.page}`);
          for (let i = 0; i < 6; i++) {
            const page = i % 3 ? `nx.${k}-${i}` : `${i % 2 ? 'nb' : 'na'}.${k}-${i}`;
            await node(i).join('app1', stream, viewer(page, `u${k}-${i}`), 100, T0);
            if (i % 3) dead.push(`app1/${stream}/${page}`);
          }
          const live = changeOf(await store.goLive('app1', stream, host.page, `r${k}`, T0 + 1));
          opened.push(...live.joined.map((w) => w.watch));
        }
        const now = T0 + 10_000;
        const leaving = dead.filter((_, i) => i % 2 === 0);
        const [batches, leaves] = await Promise.all([
          race(node, 8, (s, i) => s.takeNode('nx', now, 2 + (i % 4))),
          raceEach(node, leaving, (s, name) => {
            const [app = '', stream = '', page = ''] = name.split('/');
            return s.leave(app, stream, page, now);
          }),
        ]);
        // Whatever the racers left, later sweeps take.
        const taken = [...batches.flat(), ...(await drain(() => store.takeNode('nx', now, 5)))];
        const left = leaving.filter((_, i) => leaves[i] !== undefined);
        expect([...names(taken), ...left].sort()).toEqual([...dead].sort());
        // The presenters on the dying node ended their runs: every watch of those streams closed once.
        const changes = [...taken.map((l) => l.change), ...leaves.flatMap((r) => (r ? [r.change] : []))];
        const closedWatches = changes.flatMap((c) => c.left.map((w) => w.watch));
        expect(new Set(closedWatches).size).toBe(closedWatches.length);
        expect(changes.filter((c) => c.ended)).toHaveLength(2);
        for (const k of [1, 3]) {
          const ofRun = opened.filter((w) => w.startsWith(`r${k}.`));
          expect(closedWatches.filter((w) => w.startsWith(`r${k}.`)).sort()).toEqual(ofRun.sort());
          expect(await store.state('app1', `s${k}`)).toStrictEqual({});
        }
        for (const k of [0, 2]) {
          expect((await peer.members('app1', `s${k}`)).every((m) => !m.page.startsWith('nx.'))).toBe(true);
          expect((await peer.state('app1', `s${k}`)).liveSince).toBe(T0 + 1);
        }
      });
    });

    describe('apps and streams', () => {
      it('keeps the streams of each app, and each stream, apart', async () => {
        const store = await fresh.store();
        // The same page presenting on a stream of two apps, and on two streams of one app.
        expect(await store.join('app1', 's', presenter('na.1', 'pat'), 1, T0)).not.toBeTypeOf('string');
        expect(await store.join('app2', 's', presenter('na.1', 'pat'), 1, T0)).not.toBeTypeOf('string');
        expect(await store.join('app1', 't', viewer('na.1', 'pat'), 1, T0)).not.toBeTypeOf('string');
        expect(await store.goLive('app1', 's', 'na.1', 'r', T0 + 1)).toBeDefined();
        expect(await store.state('app2', 's')).toStrictEqual({ presenter: 'na.1' });
        expect(await store.state('app1', 't')).toStrictEqual({});
        expect((await store.leave('app2', 's', 'na.1', T0 + 2))?.change).toStrictEqual(none());
        expect(await store.state('app1', 's')).toStrictEqual({ presenter: 'na.1', liveSince: T0 + 1 });
        expect(await store.members('app1', 't')).toStrictEqual([viewer('na.1', 'pat')]);
        await store.join('app3', 's', viewer('nz.1'), 1, T0);
        await store.join('app3', 'k', viewer('nz.2'), 1, T0);
        expect(names(await store.takeNode('nz', T0, 10))).toEqual(['app3/k/nz.2', 'app3/s/nz.1']);
        expect(await store.members('app1', 't')).toStrictEqual([viewer('na.1', 'pat')]);
      });
    });
  });
}
