/**
 * The GroupStore contract as one test suite, run by every engine's runner file.
 * Time is never read from the clock: every call gets its times, so the suite moves time by hand.
 *
 * What takes a member out (`leave`, `takeNode`) must reach exactly one caller, and a group never
 * holds more than `max` pages; with a `peer` (a second store on the same backend, as on another
 * node) the suite races both against each other. Stores, clock and racing helpers: ./harness.ts.
 *
 * @example
 * ```ts
 * groupStoreContract('MemoryGroupStore', inProcess(() => new MemoryGroupStore()));
 * ```
 */
import { describe, expect, it } from 'vitest';
import type { GroupJoin, GroupLimits, GroupMember, GroupStore, LapsedMember } from '../types.js';
import { drain, freshStores, type MakeStores, race, raceEach, T0, type TwoNodes } from './harness.js';

const MAX = 8;

/** Limits where the mode does not matter: at most `max` pages, never unit mode. */
const cap = (max: number): GroupLimits => ({ max, unitFrom: Number.POSITIVE_INFINITY });
const LIMITS = cap(MAX);

/** What a join answers, a GroupJoin reduced to the members before it. */
const beforeOf = (outcome: GroupJoin | 'full' | 'already') => (typeof outcome === 'string' ? outcome : outcome.before);

/** Whether a join let the page in. */
const isJoin = (outcome: GroupJoin | 'full' | 'already'): outcome is GroupJoin => typeof outcome === 'object';

/** A member on page `page` (its node is the id up to the first '.'), joined at T0. */
function member(page: string, user = `user-${page}`, more: Partial<GroupMember> = {}): GroupMember {
  return { page, user, media: ['audio'], joinedAt: T0, ...more };
}

/** Lapsed members as `app/group/page`, sorted: takeNode promises no order. */
const names = (lapsed: readonly LapsedMember[]) =>
  lapsed.map(({ app, group, member }) => `${app}/${group}/${member.page}`).sort();

const pages = (members: readonly GroupMember[]) => members.map((m) => m.page);

export function groupStoreContract(name: string, makeStore: MakeStores<GroupStore>): void {
  describe(`GroupStore contract: ${name}`, () => {
    const fresh = freshStores(makeStore);

    describe('join', () => {
      it('answers the members there before, in join order, every field as joined', async () => {
        const { store, peer } = await fresh.nodes();
        const ann = member('na.1', 'ann:1', { media: ['audio', 'video'], joinedAt: T0 + 1 });
        const bob = member('nb.2', 'bob.ü', { media: ['video'], joinedAt: T0 + 2 });
        const cat = member('na.3', '$anon:na.3', { media: [], joinedAt: T0 + 3.5 });
        const dan = member('nb.4', 'dan', { joinedAt: T0 + 4 });
        // A group's name is the customer's: any text.
        const group = 'Sales: weekly → all {hands}';
        const mesh = { unit: false, switched: false };
        expect(await store.join('app1', group, ann, LIMITS)).toStrictEqual({ before: [], ...mesh });
        expect(await peer.join('app1', group, bob, LIMITS)).toStrictEqual({ before: [ann], ...mesh });
        expect(await store.join('app1', group, cat, LIMITS)).toStrictEqual({ before: [ann, bob], ...mesh });
        expect(await peer.join('app1', group, dan, LIMITS)).toStrictEqual({ before: [ann, bob, cat], ...mesh });
        for (const s of [store, peer]) expect(await s.members('app1', group)).toStrictEqual([ann, bob, cat, dan]);
        expect(await store.members('app1', 'no-such-group')).toStrictEqual([]);
      });

      it('keeps its own copy: changing a member given or answered changes nothing stored', async () => {
        const store = await fresh.store();
        const ann = member('na.1', 'ann');
        const joined = structuredClone(ann);
        await store.join('app1', 'g', ann, LIMITS);
        ann.media.push('video');
        ann.user = 'changed';
        const [got] = await store.members('app1', 'g');
        expect(got).toStrictEqual(joined);
        got?.media.push('video');
        const before = beforeOf(await store.join('app1', 'g', member('na.2'), LIMITS));
        expect(before).toStrictEqual([joined]);
        if (Array.isArray(before)) before[0]?.media.push('video');
        expect((await store.members('app1', 'g'))[0]).toStrictEqual(joined);
      });

      it('answers full when the group holds max pages, and stores nothing', async () => {
        const { store, peer } = await fresh.nodes();
        const three = [member('na.1'), member('nb.2'), member('na.3')];
        for (const m of three) expect(await store.join('app1', 'g', m, cap(3))).not.toBe('full');
        expect(await peer.join('app1', 'g', member('nb.4'), cap(3))).toBe('full');
        expect(await store.join('app1', 'g', member('na.5'), cap(3))).toBe('full');
        expect(await store.members('app1', 'g')).toStrictEqual(three);
        // Turned away means not in: leaving answers nothing.
        expect(await peer.leave('app1', 'g', 'nb.4')).toBeUndefined();
        // A seat freed is a seat to take.
        await store.leave('app1', 'g', 'nb.2');
        expect(beforeOf(await peer.join('app1', 'g', member('nb.4'), cap(3)))).toStrictEqual([three[0], three[2]]);
        expect(await store.join('app1', 'g', member('na.5'), cap(3))).toBe('full');
        // max 1: one page alone.
        expect(beforeOf(await store.join('app1', 'solo', member('na.1'), cap(1)))).toStrictEqual([]);
        expect(await store.join('app1', 'solo', member('na.2'), cap(1))).toBe('full');
      });

      it('answers already for a page in the group, and changes nothing', async () => {
        const { store, peer } = await fresh.nodes();
        const ann = member('na.1', 'ann');
        const bob = member('nb.2', 'bob');
        await store.join('app1', 'g', ann, cap(2));
        await store.join('app1', 'g', bob, cap(2));
        // The same page again, from either node, with other fields: the first record stays.
        expect(await peer.join('app1', 'g', { ...ann, media: ['video'], joinedAt: T0 + 9 }, LIMITS)).toBe('already');
        // At max, a page in it is there already rather than turned away.
        expect(await store.join('app1', 'g', bob, cap(2))).toBe('already');
        expect(await store.members('app1', 'g')).toStrictEqual([ann, bob]);
        expect(await store.leave('app1', 'g', 'na.1')).toStrictEqual(ann);
        expect(await store.leave('app1', 'g', 'na.1')).toBeUndefined();
      });

      it('lets one of many racing joins of one page from two nodes in', async () => {
        const { store, peer, node } = await fresh.nodes();
        await store.join('app1', 'g', member('na.0'), LIMITS);
        const outcomes = await race(node, 10, (s, i) =>
          s.join('app1', 'g', member('na.1', 'ann', { joinedAt: T0 + i }), LIMITS),
        );
        expect(outcomes.filter(isJoin).map((o) => o.before)).toStrictEqual([[member('na.0')]]);
        expect(outcomes.filter((o) => o === 'already')).toHaveLength(9);
        expect(pages(await peer.members('app1', 'g'))).toEqual(['na.0', 'na.1']);
      });

      it('never lets racing joins from two nodes pass max', async () => {
        const { store, node } = await fresh.nodes();
        for (let round = 0; round < 5; round++) {
          const group = `g${round}`;
          const max = 2 + round;
          const joining = Array.from({ length: 16 }, (_, i) => member(`${i % 2 ? 'nb' : 'na'}.${i}`));
          const outcomes = await raceEach(node, joining, (s, m) => s.join('app1', group, m, cap(max)));
          const admitted = outcomes.filter(isJoin).map((o) => o.before);
          expect(admitted).toHaveLength(max);
          expect(outcomes.filter((o) => o === 'full')).toHaveLength(16 - max);
          const now = await store.members('app1', group);
          expect(now).toHaveLength(max);
          // One join at a time: each saw the ones before it, a prefix of the final order.
          const seen = [...admitted].sort((a, b) => a.length - b.length);
          for (const [i, before] of seen.entries()) expect(before).toStrictEqual(now.slice(0, i));
          // The pages in are the ones answered with members, each once.
          const winners = joining.filter((_, i) => typeof outcomes[i] === 'object');
          expect(pages(now).sort()).toEqual(pages(winners).sort());
        }
      });
    });

    describe('leave', () => {
      it('takes the page out and answers its member once; the rest keep their order', async () => {
        const { store, peer } = await fresh.nodes();
        const all = ['na.1', 'nb.2', 'na.3', 'nb.4'].map((p, i) =>
          member(p, `u${i}`, { media: i % 2 ? ['audio', 'video'] : ['audio'], joinedAt: T0 + i }),
        );
        for (const m of all) await store.join('app1', 'g', m, LIMITS);
        expect(await peer.leave('app1', 'g', 'nb.2')).toStrictEqual(all[1]);
        expect(await store.leave('app1', 'g', 'nb.2')).toBeUndefined();
        expect(await peer.leave('app1', 'g', 'nb.2')).toBeUndefined();
        for (const s of [store, peer]) expect(pages(await s.members('app1', 'g'))).toEqual(['na.1', 'na.3', 'nb.4']);
        // A page that left may come back: at the end of the order.
        expect(beforeOf(await peer.join('app1', 'g', all[1] as GroupMember, LIMITS))).toStrictEqual([
          all[0],
          all[2],
          all[3],
        ]);
        expect(pages(await store.members('app1', 'g'))).toEqual(['na.1', 'na.3', 'nb.4', 'nb.2']);
      });

      it('answers undefined for a page not in the group', async () => {
        const store = await fresh.store();
        await store.join('app1', 'g', member('na.1'), LIMITS);
        expect(await store.leave('app1', 'g', 'na.2')).toBeUndefined();
        expect(await store.leave('app1', 'other', 'na.1')).toBeUndefined();
        expect(await store.leave('app2', 'g', 'na.1')).toBeUndefined();
        expect(await store.leave('app1', 'no-such-group', 'nb.9')).toBeUndefined();
        expect(await store.members('app1', 'g')).toStrictEqual([member('na.1')]);
      });

      it('lets an empty group go: after its last member it is as new', async () => {
        const { store, peer } = await fresh.nodes();
        await store.join('app1', 'g', member('na.1'), cap(2));
        await peer.join('app1', 'g', member('nb.2'), cap(2));
        await store.leave('app1', 'g', 'na.1');
        await peer.leave('app1', 'g', 'nb.2');
        for (const s of [store, peer]) expect(await s.members('app1', 'g')).toStrictEqual([]);
        expect(beforeOf(await peer.join('app1', 'g', member('nb.3'), cap(1)))).toStrictEqual([]);
        expect(await store.join('app1', 'g', member('na.1'), cap(1))).toBe('full');
      });

      it('hands each member to exactly one of many racing leaves from two nodes', async () => {
        const { store, node } = await fresh.nodes();
        const joined: GroupMember[] = [];
        for (let i = 0; i < 12; i++) {
          const m = member(`${i % 2 ? 'nb' : 'na'}.${i}`, `u${i}`, { joinedAt: T0 + i });
          await node(i).join('app1', `g${i % 3}`, m, LIMITS);
          joined.push(m);
        }
        // Four leaves of each member, two through each node.
        const fourEach = joined.flatMap((m, i) =>
          Array.from({ length: 4 }, () => ({ group: `g${i % 3}`, page: m.page })),
        );
        const left = await raceEach(node, fourEach, (s, { group, page }) => s.leave('app1', group, page));
        const records = left.filter((r) => r !== undefined);
        expect(records.sort((a, b) => a.joinedAt - b.joinedAt)).toStrictEqual(joined);
        for (const g of ['g0', 'g1', 'g2']) expect(await store.members('app1', g)).toStrictEqual([]);
      });
    });

    describe('takeNode', () => {
      it('takes the members of a node, once; the other nodes’ members stay', async () => {
        const { store, peer } = await fresh.nodes();
        const dying = [member('nx.1', 'ann'), member('nx.2', 'bob', { media: ['audio', 'video'] })];
        await store.join('app1', 'g', member('na.1'), LIMITS);
        await store.join('app1', 'g', dying[0] as GroupMember, LIMITS);
        await peer.join('app1', 'g', member('nb.1'), LIMITS);
        await peer.join('app1', 'h', dying[1] as GroupMember, LIMITS);
        await peer.join('app1', 'h', member('nb.2'), LIMITS);
        expect(await store.takeNode('nz', 10)).toEqual([]);
        const taken = await peer.takeNode('nx', 10);
        expect([...taken].sort((a, b) => a.member.page.localeCompare(b.member.page))).toStrictEqual([
          { app: 'app1', group: 'g', member: dying[0] },
          { app: 'app1', group: 'h', member: dying[1] },
        ]);
        expect(await store.takeNode('nx', 10)).toEqual([]);
        expect(await peer.takeNode('nx', 10)).toEqual([]);
        // The other nodes' members stay.
        expect(pages(await store.members('app1', 'g'))).toEqual(['na.1', 'nb.1']);
        expect(pages(await peer.members('app1', 'h'))).toEqual(['nb.2']);
        expect(await store.leave('app1', 'g', 'nx.1')).toBeUndefined();
      });

      it('takes nothing of members that left already', async () => {
        const store = await fresh.store();
        await store.join('app1', 'g', member('nx.1'), LIMITS);
        await store.join('app1', 'g', member('nx.2'), LIMITS);
        await store.join('app1', 'h', member('nx.3'), LIMITS);
        await store.leave('app1', 'g', 'nx.1');
        await store.leave('app1', 'h', 'nx.3');
        expect(names(await store.takeNode('nx', 10))).toEqual(['app1/g/nx.2']);
        expect(await store.takeNode('nx', 10)).toEqual([]);
      });

      it('takes at most `limit` members a time, the rest later', async () => {
        const store = await fresh.store();
        const due: string[] = [];
        for (let i = 0; i < 7; i++) {
          // Dead pages of two nodes, some sharing a group, among live ones.
          const page = `${i % 3 ? 'nx' : 'ny'}.${i}`;
          const group = `g${i % 2}`;
          await store.join('app1', group, member(page), LIMITS);
          await store.join('app1', group, member(`na.${i}`), LIMITS);
          due.push(`app1/${group}/${page}`);
        }
        expect(await store.takeNode('nx', 0)).toEqual([]);
        const taken: LapsedMember[] = [];
        for (const [node, sizes] of [
          ['nx', [2, 2, 0]],
          ['ny', [2, 1, 0]],
        ] as const) {
          for (const size of sizes) {
            const batch = await store.takeNode(node, 2);
            expect(batch).toHaveLength(size);
            taken.push(...batch);
          }
        }
        expect(names(taken)).toEqual(due.sort());
        for (const group of ['g0', 'g1']) {
          expect((await store.members('app1', group)).every((m) => m.page.startsWith('na.'))).toBe(true);
        }
      });

      it('hands each lapsed member to exactly one of many racing takers and leaves on two nodes', async () => {
        const { store, node } = await fresh.nodes();
        const dead: string[] = [];
        for (let i = 0; i < 30; i++) {
          const group = `g${i % 4}`;
          const page = i % 3 ? `nx.${i}` : `${i % 2 ? 'nb' : 'na'}.${i}`;
          await node(i).join('app1', group, member(page), cap(100));
          if (i % 3) dead.push(`app1/${group}/${page}`);
        }
        // Sweeps on both nodes, and a leave for every other dead page, all at once.
        const leaving = dead.filter((_, i) => i % 2 === 0);
        const [batches, leaves] = await Promise.all([
          race(node, 8, (s, i) => s.takeNode('nx', 2 + (i % 4))),
          raceEach(node, leaving, (s, name) => {
            const [app = '', group = '', page = ''] = name.split('/');
            return s.leave(app, group, page);
          }),
        ]);
        const taken = names(batches.flat());
        // Whatever the racers left, later sweeps take.
        taken.push(...names(await drain(() => store.takeNode('nx', 5))));
        const left = leaving.filter((_, i) => leaves[i] !== undefined);
        expect([...taken, ...left].sort()).toEqual([...dead].sort());
        for (let g = 0; g < 4; g++) {
          expect((await store.members('app1', `g${g}`)).every((m) => !m.page.startsWith('nx.'))).toBe(true);
        }
      });
    });

    describe('unit mode', () => {
      /** Joins pages `na.1` … `na.<count>` (from store and peer in turn) and answers each outcome. */
      async function fill(
        sides: TwoNodes<GroupStore>,
        group: string,
        count: number,
        limits: GroupLimits,
        from = 1,
      ): Promise<(GroupJoin | 'full' | 'already')[]> {
        const outcomes: (GroupJoin | 'full' | 'already')[] = [];
        for (let i = from; i < from + count; i++) {
          outcomes.push(await sides.node(i + 1).join('app1', group, member(`${i % 2 ? 'na' : 'nb'}.${i}`), limits));
        }
        return outcomes;
      }

      /** The mode parts of join outcomes, as `unit/switched` (m: mesh, U: unit; !: switched). */
      const modes = (outcomes: readonly (GroupJoin | 'full' | 'already')[]) =>
        outcomes.map((o) => (isJoin(o) ? `${o.unit ? 'U' : 'm'}${o.switched ? '!' : ''}` : o));

      it('switches at exactly unitFrom pages, once; later joins are in unit mode', async () => {
        const sides = await fresh.nodes();
        const { store, peer } = sides;
        const limits = { max: MAX, unitFrom: 3 };
        expect(modes(await fill(sides, 'g', 2, limits))).toEqual(['m', 'm']);
        for (const s of [store, peer]) expect(await s.unit('app1', 'g')).toBe(false);
        const third = await peer.join('app1', 'g', member('nb.3'), limits);
        expect(third).toStrictEqual({ before: [member('na.1'), member('nb.2')], unit: true, switched: true });
        for (const s of [store, peer]) expect(await s.unit('app1', 'g')).toBe(true);
        expect(modes(await fill(sides, 'g', 3, limits, 4))).toEqual(['U', 'U', 'U']);
        expect(pages(await store.members('app1', 'g'))).toHaveLength(6);
      });

      it('stays in unit mode while pages leave, down to one, and does not switch again', async () => {
        const sides = await fresh.nodes();
        const { store, peer } = sides;
        const limits = { max: MAX, unitFrom: 3 };
        expect(modes(await fill(sides, 'g', 4, limits))).toEqual(['m', 'm', 'U!', 'U']);
        await store.leave('app1', 'g', 'na.1');
        await peer.leave('app1', 'g', 'nb.2');
        await store.leave('app1', 'g', 'na.3');
        expect(pages(await store.members('app1', 'g'))).toEqual(['nb.4']);
        for (const s of [store, peer]) expect(await s.unit('app1', 'g')).toBe(true);
        // Back past the threshold: still the same switch, none again.
        expect(modes(await fill(sides, 'g', 3, limits, 5))).toEqual(['U', 'U', 'U']);
        expect(await store.unit('app1', 'g')).toBe(true);
      });

      it('starts again in mesh once its last page left, and can switch again', async () => {
        const sides = await fresh.nodes();
        const { store, peer } = sides;
        const limits = { max: MAX, unitFrom: 2 };
        expect(modes(await fill(sides, 'g', 2, limits))).toEqual(['m', 'U!']);
        await peer.leave('app1', 'g', 'nb.2');
        expect(await store.unit('app1', 'g')).toBe(true);
        await store.leave('app1', 'g', 'na.1');
        for (const s of [store, peer]) expect(await s.unit('app1', 'g')).toBe(false);
        expect(modes(await fill(sides, 'g', 3, limits, 3))).toEqual(['m', 'U!', 'U']);
        for (const s of [store, peer]) expect(await s.unit('app1', 'g')).toBe(true);
      });

      it('starts again in mesh once its last page went by takeNode; a group with a live page stays in unit mode', async () => {
        const { store, peer } = await fresh.nodes();
        const limits = { max: MAX, unitFrom: 2 };
        await store.join('app1', 'dead', member('nx.1'), limits);
        expect(modes([await peer.join('app1', 'dead', member('nx.2'), limits)])).toEqual(['U!']);
        await store.join('app1', 'mixed', member('nx.3'), limits);
        expect(modes([await peer.join('app1', 'mixed', member('nb.1'), limits)])).toEqual(['U!']);
        expect(names(await peer.takeNode('nx', 10))).toEqual(['app1/dead/nx.1', 'app1/dead/nx.2', 'app1/mixed/nx.3']);
        for (const s of [store, peer]) {
          expect(await s.unit('app1', 'dead')).toBe(false);
          expect(await s.unit('app1', 'mixed')).toBe(true);
        }
        expect(await store.join('app1', 'dead', member('na.1'), limits)).toStrictEqual({
          before: [],
          unit: false,
          switched: false,
        });
        expect(modes([await store.join('app1', 'mixed', member('na.2'), limits)])).toEqual(['U']);
      });

      it('switches at the first join when unitFrom is 1 or less (NaN as 0), never when Infinity', async () => {
        const sides = await fresh.nodes();
        const { store } = sides;
        for (const [i, unitFrom] of [1, 0, -1, Number.NEGATIVE_INFINITY, Number.NaN, 0.5].entries()) {
          expect(modes(await fill(sides, `low${i}`, 3, { max: MAX, unitFrom }))).toEqual(['U!', 'U', 'U']);
          expect(await store.unit('app1', `low${i}`)).toBe(true);
        }
        // A threshold between whole numbers counts up: 2.5 switches at the third page.
        expect(modes(await fill(sides, 'frac', 3, { max: MAX, unitFrom: 2.5 }))).toEqual(['m', 'm', 'U!']);
        const never = await fill(sides, 'never', MAX, { max: MAX, unitFrom: Number.POSITIVE_INFINITY });
        expect(modes(never)).toEqual(Array.from({ length: MAX }, () => 'm'));
        expect(await store.unit('app1', 'never')).toBe(false);
      });

      it('switches nothing on full or already, even past the threshold', async () => {
        const sides = await fresh.nodes();
        const { store, peer } = sides;
        expect(modes(await fill(sides, 'g', 2, { max: 2, unitFrom: 3 }))).toEqual(['m', 'm']);
        // Turned away at max, with a threshold it would reach or has passed.
        expect(await store.join('app1', 'g', member('na.9'), { max: 2, unitFrom: 3 })).toBe('full');
        expect(await peer.join('app1', 'g', member('nb.9'), { max: 2, unitFrom: 1 })).toBe('full');
        // A page in it already, with a threshold the group has reached.
        expect(await store.join('app1', 'g', member('na.1'), { max: MAX, unitFrom: 2 })).toBe('already');
        expect(await peer.join('app1', 'g', member('nb.2'), { max: MAX, unitFrom: 1 })).toBe('already');
        for (const s of [store, peer]) expect(await s.unit('app1', 'g')).toBe(false);
        // The next page let in, at or past the threshold, switches it.
        expect(modes([await peer.join('app1', 'g', member('nb.3'), { max: MAX, unitFrom: 2 })])).toEqual(['U!']);
        // And full or already on a group in unit mode change nothing either.
        expect(await store.join('app1', 'g', member('na.4'), { max: 3, unitFrom: 1 })).toBe('full');
        expect(await store.join('app1', 'g', member('na.1'), { max: MAX, unitFrom: 1 })).toBe('already');
        expect(await store.unit('app1', 'g')).toBe(true);
        expect(pages(await store.members('app1', 'g'))).toEqual(['na.1', 'nb.2', 'nb.3']);
      });

      it('answers false for a group never joined, and keeps the mode of each app and group apart', async () => {
        const sides = await fresh.nodes();
        const { store, peer } = sides;
        expect(await store.unit('app1', 'no-such-group')).toBe(false);
        expect(await peer.unit('app9', 'g')).toBe(false);
        await fill(sides, 'g', 2, { max: MAX, unitFrom: 2 });
        await store.join('app2', 'g', member('na.1'), { max: MAX, unitFrom: 2 });
        await store.join('app1', 'h', member('na.1'), { max: MAX, unitFrom: 2 });
        expect(await store.unit('app1', 'g')).toBe(true);
        expect(await store.unit('app2', 'g')).toBe(false);
        expect(await store.unit('app1', 'h')).toBe(false);
        expect(await store.unit('app1', 'no-such-group')).toBe(false);
      });

      it('hands the switch to exactly one of many racing joins from two nodes, each time the group fills again', async () => {
        const { store, peer, node } = await fresh.nodes();
        for (let round = 0; round < 5; round++) {
          const group = `g${round % 2}`;
          const unitFrom = 2 + round;
          const limits = { max: 12, unitFrom };
          const joining = Array.from({ length: 16 }, (_, i) => member(`${i % 2 ? 'nb' : 'na'}.${round}-${i}`));
          const outcomes = await raceEach(node, joining, (s, m) => s.join('app1', group, m, limits));
          const joins = outcomes.filter(isJoin);
          expect(joins).toHaveLength(12);
          const switches = joins.filter((o) => o.switched);
          expect(switches).toHaveLength(1);
          // The switch went to the join that made the group unitFrom pages; every later join saw unit mode.
          expect(switches[0]?.before).toHaveLength(unitFrom - 1);
          for (const o of joins) expect(o.unit).toBe(o.before.length >= unitFrom - 1);
          // Everyone leaves at once from both nodes: the next round starts in mesh.
          // Each page leaves through the other node than it joined by.
          await raceEach(
            (i) => node(i + 1),
            joining,
            (s, m) => s.leave('app1', group, m.page),
          );
          for (const s of [store, peer]) expect(await s.unit('app1', group)).toBe(false);
        }
      });
    });

    describe('apps and groups', () => {
      it('keeps the groups of each app, and each group, apart', async () => {
        const store = await fresh.store();
        const one = member('na.1', 'ann');
        const two = member('na.1', 'ann', { media: ['video'], joinedAt: T0 + 7 });
        // The same page in a group of two apps, and in two groups of one app.
        expect(beforeOf(await store.join('app1', 'g', one, cap(1)))).toStrictEqual([]);
        expect(beforeOf(await store.join('app2', 'g', two, cap(1)))).toStrictEqual([]);
        expect(beforeOf(await store.join('app1', 'h', two, cap(1)))).toStrictEqual([]);
        expect(await store.members('app1', 'g')).toStrictEqual([one]);
        expect(await store.members('app2', 'g')).toStrictEqual([two]);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
        expect(await store.leave('app2', 'g', 'na.1')).toStrictEqual(two);
        expect(await store.members('app1', 'g')).toStrictEqual([one]);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
        expect(await store.leave('app1', 'g', 'na.1')).toStrictEqual(one);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
        // Each app's lapsed members come back with their app and group.
        await store.join('app3', 'g', member('nz.1'), cap(1));
        await store.join('app3', 'k', member('nz.2'), cap(1));
        expect(names(await store.takeNode('nz', 10))).toEqual(['app3/g/nz.1', 'app3/k/nz.2']);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
      });
    });
  });
}
