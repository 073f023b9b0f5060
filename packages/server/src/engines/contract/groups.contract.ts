/**
 * The GroupStore contract as one test suite, run by every engine's runner file.
 * Time is never read from the clock: every call gets its times, so the suite moves time by hand.
 *
 * What takes a member out (`leave`, `takeLapsed`) must reach exactly one caller, and a group never
 * holds more than `max` pages; with a `peer` (a second store on the same backend, as on another
 * node) the suite races both against each other.
 *
 * @example
 * ```ts
 * groupStoreContract('MemoryGroupStore', async () => ({ store: new MemoryGroupStore(), cleanup: async () => {} }));
 * ```
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { GroupMember, GroupStore, LapsedMember } from '../types.js';

export interface GroupsHarness {
  /** A store with no group and no node lease. */
  store: GroupStore;
  /**
   * A second store on the same backend, as on another node: what either is told counts for both.
   * Engines of one process leave it out; the tests then use `store` for both sides.
   */
  peer?: GroupStore;
  /** Closes the stores and removes whatever they kept. */
  cleanup(): Promise<void>;
}

const T0 = 1_700_000_000_000;
/** A lease no test outlives. */
const FOREVER = T0 + 365 * 24 * 3600_000;
const MAX = 8;

/** A member on page `page` (its node is the id up to the first '.'), joined at T0. */
function member(page: string, user = `user-${page}`, more: Partial<GroupMember> = {}): GroupMember {
  return { page, user, media: ['audio'], joinedAt: T0, ...more };
}

/** Lapsed members as `app/group/page`, sorted: takeLapsed promises no order. */
const names = (lapsed: readonly LapsedMember[]) =>
  lapsed.map(({ app, group, member }) => `${app}/${group}/${member.page}`).sort();

const pages = (members: readonly GroupMember[]) => members.map((m) => m.page);

export function groupStoreContract(name: string, makeStore: () => Promise<GroupsHarness>): void {
  describe(`GroupStore contract: ${name}`, () => {
    const open: GroupsHarness[] = [];

    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.cleanup();
    });

    /** Both views on a fresh store, nodes `na` and `nb` alive (their members only leave when told). */
    async function makeBoth(): Promise<{ store: GroupStore; peer: GroupStore }> {
      const harness = await makeStore();
      open.push(harness);
      const store = harness.store;
      const peer = harness.peer ?? harness.store;
      await store.renew('na', FOREVER);
      await peer.renew('nb', FOREVER);
      return { store, peer };
    }

    async function make(): Promise<GroupStore> {
      return (await makeBoth()).store;
    }

    describe('join', () => {
      it('answers the members there before, in join order, every field as joined', async () => {
        const { store, peer } = await makeBoth();
        const ann = member('na.1', 'ann:1', { media: ['audio', 'video'], joinedAt: T0 + 1 });
        const bob = member('nb.2', 'bob.ü', { media: ['video'], joinedAt: T0 + 2 });
        const cat = member('na.3', '$anon:na.3', { media: [], joinedAt: T0 + 3.5 });
        const dan = member('nb.4', 'dan', { joinedAt: T0 + 4 });
        // A group's name is the customer's: any text.
        const group = 'Sales: weekly → all {hands}';
        expect(await store.join('app1', group, ann, MAX)).toStrictEqual([]);
        expect(await peer.join('app1', group, bob, MAX)).toStrictEqual([ann]);
        expect(await store.join('app1', group, cat, MAX)).toStrictEqual([ann, bob]);
        expect(await peer.join('app1', group, dan, MAX)).toStrictEqual([ann, bob, cat]);
        for (const s of [store, peer]) expect(await s.members('app1', group)).toStrictEqual([ann, bob, cat, dan]);
        expect(await store.members('app1', 'no-such-group')).toStrictEqual([]);
      });

      it('keeps its own copy: changing a member given or answered changes nothing stored', async () => {
        const store = await make();
        const ann = member('na.1', 'ann');
        const joined = structuredClone(ann);
        await store.join('app1', 'g', ann, MAX);
        ann.media.push('video');
        ann.user = 'changed';
        const [got] = await store.members('app1', 'g');
        expect(got).toStrictEqual(joined);
        got?.media.push('video');
        const before = await store.join('app1', 'g', member('na.2'), MAX);
        expect(before).toStrictEqual([joined]);
        if (Array.isArray(before)) before[0]?.media.push('video');
        expect((await store.members('app1', 'g'))[0]).toStrictEqual(joined);
      });

      it('answers full when the group holds max pages, and stores nothing', async () => {
        const { store, peer } = await makeBoth();
        const three = [member('na.1'), member('nb.2'), member('na.3')];
        for (const m of three) expect(await store.join('app1', 'g', m, 3)).not.toBe('full');
        expect(await peer.join('app1', 'g', member('nb.4'), 3)).toBe('full');
        expect(await store.join('app1', 'g', member('na.5'), 3)).toBe('full');
        expect(await store.members('app1', 'g')).toStrictEqual(three);
        // Turned away means not in: leaving answers nothing.
        expect(await peer.leave('app1', 'g', 'nb.4')).toBeUndefined();
        // A seat freed is a seat to take.
        await store.leave('app1', 'g', 'nb.2');
        expect(await peer.join('app1', 'g', member('nb.4'), 3)).toStrictEqual([three[0], three[2]]);
        expect(await store.join('app1', 'g', member('na.5'), 3)).toBe('full');
        // max 1: one page alone.
        expect(await store.join('app1', 'solo', member('na.1'), 1)).toStrictEqual([]);
        expect(await store.join('app1', 'solo', member('na.2'), 1)).toBe('full');
      });

      it('answers already for a page in the group, and changes nothing', async () => {
        const { store, peer } = await makeBoth();
        const ann = member('na.1', 'ann');
        const bob = member('nb.2', 'bob');
        await store.join('app1', 'g', ann, 2);
        await store.join('app1', 'g', bob, 2);
        // The same page again, from either node, with other fields: the first record stays.
        expect(await peer.join('app1', 'g', { ...ann, media: ['video'], joinedAt: T0 + 9 }, MAX)).toBe('already');
        // At max, a page in it is there already rather than turned away.
        expect(await store.join('app1', 'g', bob, 2)).toBe('already');
        expect(await store.members('app1', 'g')).toStrictEqual([ann, bob]);
        expect(await store.leave('app1', 'g', 'na.1')).toStrictEqual(ann);
        expect(await store.leave('app1', 'g', 'na.1')).toBeUndefined();
      });

      it('lets one of many racing joins of one page from two nodes in', async () => {
        const { store, peer } = await makeBoth();
        await store.join('app1', 'g', member('na.0'), MAX);
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (i % 2 ? peer : store).join('app1', 'g', member('na.1', 'ann', { joinedAt: T0 + i }), MAX),
          ),
        );
        expect(outcomes.filter((o) => Array.isArray(o))).toStrictEqual([[member('na.0')]]);
        expect(outcomes.filter((o) => o === 'already')).toHaveLength(9);
        expect(pages(await peer.members('app1', 'g'))).toEqual(['na.0', 'na.1']);
      });

      it('never lets racing joins from two nodes pass max', async () => {
        const { store, peer } = await makeBoth();
        for (let round = 0; round < 5; round++) {
          const group = `g${round}`;
          const max = 2 + round;
          const joining = Array.from({ length: 16 }, (_, i) => member(`${i % 2 ? 'nb' : 'na'}.${i}`));
          const outcomes = await Promise.all(joining.map((m, i) => (i % 2 ? peer : store).join('app1', group, m, max)));
          const admitted = outcomes.filter((o) => Array.isArray(o));
          expect(admitted).toHaveLength(max);
          expect(outcomes.filter((o) => o === 'full')).toHaveLength(16 - max);
          const now = await store.members('app1', group);
          expect(now).toHaveLength(max);
          // One join at a time: each saw the ones before it, a prefix of the final order.
          const seen = [...admitted].sort((a, b) => a.length - b.length);
          for (const [i, before] of seen.entries()) expect(before).toStrictEqual(now.slice(0, i));
          // The pages in are the ones answered with members, each once.
          const winners = joining.filter((_, i) => Array.isArray(outcomes[i]));
          expect(pages(now).sort()).toEqual(pages(winners).sort());
        }
      });
    });

    describe('leave', () => {
      it('takes the page out and answers its member once; the rest keep their order', async () => {
        const { store, peer } = await makeBoth();
        const all = ['na.1', 'nb.2', 'na.3', 'nb.4'].map((p, i) =>
          member(p, `u${i}`, { media: i % 2 ? ['audio', 'video'] : ['audio'], joinedAt: T0 + i }),
        );
        for (const m of all) await store.join('app1', 'g', m, MAX);
        expect(await peer.leave('app1', 'g', 'nb.2')).toStrictEqual(all[1]);
        expect(await store.leave('app1', 'g', 'nb.2')).toBeUndefined();
        expect(await peer.leave('app1', 'g', 'nb.2')).toBeUndefined();
        for (const s of [store, peer]) expect(pages(await s.members('app1', 'g'))).toEqual(['na.1', 'na.3', 'nb.4']);
        // A page that left may come back: at the end of the order.
        expect(await peer.join('app1', 'g', all[1] as GroupMember, MAX)).toStrictEqual([all[0], all[2], all[3]]);
        expect(pages(await store.members('app1', 'g'))).toEqual(['na.1', 'na.3', 'nb.4', 'nb.2']);
      });

      it('answers undefined for a page not in the group', async () => {
        const store = await make();
        await store.join('app1', 'g', member('na.1'), MAX);
        expect(await store.leave('app1', 'g', 'na.2')).toBeUndefined();
        expect(await store.leave('app1', 'other', 'na.1')).toBeUndefined();
        expect(await store.leave('app2', 'g', 'na.1')).toBeUndefined();
        expect(await store.leave('app1', 'no-such-group', 'nb.9')).toBeUndefined();
        expect(await store.members('app1', 'g')).toStrictEqual([member('na.1')]);
      });

      it('lets an empty group go: after its last member it is as new', async () => {
        const { store, peer } = await makeBoth();
        await store.join('app1', 'g', member('na.1'), 2);
        await peer.join('app1', 'g', member('nb.2'), 2);
        await store.leave('app1', 'g', 'na.1');
        await peer.leave('app1', 'g', 'nb.2');
        for (const s of [store, peer]) expect(await s.members('app1', 'g')).toStrictEqual([]);
        expect(await peer.join('app1', 'g', member('nb.3'), 1)).toStrictEqual([]);
        expect(await store.join('app1', 'g', member('na.1'), 1)).toBe('full');
      });

      it('hands each member to exactly one of many racing leaves from two nodes', async () => {
        const { store, peer } = await makeBoth();
        const joined: GroupMember[] = [];
        for (let i = 0; i < 12; i++) {
          const m = member(`${i % 2 ? 'nb' : 'na'}.${i}`, `u${i}`, { joinedAt: T0 + i });
          await (i % 2 ? peer : store).join('app1', `g${i % 3}`, m, MAX);
          joined.push(m);
        }
        const left = await Promise.all(
          joined.flatMap((m, i) => [0, 1, 2, 3].map((n) => (n % 2 ? peer : store).leave('app1', `g${i % 3}`, m.page))),
        );
        const records = left.filter((r) => r !== undefined);
        expect(records.sort((a, b) => a.joinedAt - b.joinedAt)).toStrictEqual(joined);
        for (const g of ['g0', 'g1', 'g2']) expect(await store.members('app1', g)).toStrictEqual([]);
      });
    });

    describe('takeLapsed', () => {
      it('takes the members of a node whose lease lapsed, once; the live nodes’ members stay', async () => {
        const { store, peer } = await makeBoth();
        await peer.renew('nx', T0 + 5000);
        const dying = [member('nx.1', 'ann'), member('nx.2', 'bob', { media: ['audio', 'video'] })];
        await store.join('app1', 'g', member('na.1'), MAX);
        await store.join('app1', 'g', dying[0] as GroupMember, MAX);
        await peer.join('app1', 'g', member('nb.1'), MAX);
        await peer.join('app1', 'h', dying[1] as GroupMember, MAX);
        await peer.join('app1', 'h', member('nb.2'), MAX);
        expect(await store.takeLapsed(T0 + 4000, 10)).toEqual([]);
        const taken = await peer.takeLapsed(T0 + 6000, 10);
        expect([...taken].sort((a, b) => a.member.page.localeCompare(b.member.page))).toStrictEqual([
          { app: 'app1', group: 'g', member: dying[0] },
          { app: 'app1', group: 'h', member: dying[1] },
        ]);
        expect(await store.takeLapsed(T0 + 6000, 10)).toEqual([]);
        expect(await peer.takeLapsed(T0 + 7000, 10)).toEqual([]);
        // The live nodes' members stay, however late.
        expect(await store.takeLapsed(FOREVER - 1, 10)).toEqual([]);
        expect(pages(await store.members('app1', 'g'))).toEqual(['na.1', 'nb.1']);
        expect(pages(await peer.members('app1', 'h'))).toEqual(['nb.2']);
        expect(await store.leave('app1', 'g', 'nx.1')).toBeUndefined();
      });

      it('takes the members of a node that never renewed', async () => {
        const store = await make();
        const ghost = member('nz.1', 'ann');
        expect(await store.join('app1', 'g', ghost, MAX)).toStrictEqual([]);
        await store.join('app1', 'g', member('na.1'), MAX);
        expect(await store.takeLapsed(T0, 10)).toStrictEqual([{ app: 'app1', group: 'g', member: ghost }]);
        expect(await store.members('app1', 'g')).toStrictEqual([member('na.1')]);
      });

      it('keeps the members of a node that renewed again before any sweep', async () => {
        const { store, peer } = await makeBoth();
        await store.renew('nx', T0 + 5000);
        await store.join('app1', 'g', member('nx.1'), MAX);
        await store.renew('nx', T0 + 40_000);
        expect(await peer.takeLapsed(T0 + 10_000, 10)).toEqual([]);
        expect(pages(await store.members('app1', 'g'))).toEqual(['nx.1']);
        // And a node that lapsed with nothing to take counts again once it renews.
        await store.renew('nw', T0 + 1000);
        expect(await peer.takeLapsed(T0 + 10_000, 10)).toEqual([]);
        await store.renew('nw', T0 + 30_000);
        await store.join('app1', 'g', member('nw.1'), MAX);
        expect(await peer.takeLapsed(T0 + 10_000, 10)).toEqual([]);
        expect(names(await peer.takeLapsed(T0 + 40_000, 10))).toEqual(['app1/g/nw.1', 'app1/g/nx.1']);
      });

      it('takes nothing of members that left already', async () => {
        const store = await make();
        await store.renew('nx', T0 + 5000);
        await store.join('app1', 'g', member('nx.1'), MAX);
        await store.join('app1', 'g', member('nx.2'), MAX);
        await store.join('app1', 'h', member('nx.3'), MAX);
        await store.leave('app1', 'g', 'nx.1');
        await store.leave('app1', 'h', 'nx.3');
        expect(names(await store.takeLapsed(T0 + 10_000, 10))).toEqual(['app1/g/nx.2']);
        expect(await store.takeLapsed(T0 + 10_000, 10)).toEqual([]);
      });

      it('takes at most `limit` members a time, the rest later', async () => {
        const store = await make();
        await store.renew('nx', T0 + 5000);
        const due: string[] = [];
        for (let i = 0; i < 7; i++) {
          // Dead pages of two nodes, some sharing a group, among live ones.
          const page = `${i % 3 ? 'nx' : 'ny'}.${i}`;
          const group = `g${i % 2}`;
          await store.join('app1', group, member(page), MAX);
          await store.join('app1', group, member(`na.${i}`), MAX);
          due.push(`app1/${group}/${page}`);
        }
        const now = T0 + 10_000;
        expect(await store.takeLapsed(now, 0)).toEqual([]);
        const taken: LapsedMember[] = [];
        for (const size of [2, 2, 2, 1]) {
          const batch = await store.takeLapsed(now, 2);
          expect(batch).toHaveLength(size);
          taken.push(...batch);
        }
        expect(await store.takeLapsed(now, 2)).toEqual([]);
        expect(names(taken)).toEqual(due.sort());
        for (const group of ['g0', 'g1']) {
          expect((await store.members('app1', group)).every((m) => m.page.startsWith('na.'))).toBe(true);
        }
      });

      it('hands each lapsed member to exactly one of many racing takers and leaves on two nodes', async () => {
        const { store, peer } = await makeBoth();
        await store.renew('nx', T0 + 5000);
        const dead: string[] = [];
        for (let i = 0; i < 30; i++) {
          const group = `g${i % 4}`;
          const page = i % 3 ? `nx.${i}` : `${i % 2 ? 'nb' : 'na'}.${i}`;
          await (i % 2 ? peer : store).join('app1', group, member(page), 100);
          if (i % 3) dead.push(`app1/${group}/${page}`);
        }
        const now = T0 + 10_000;
        // Sweeps on both nodes, and a leave for every other dead page, all at once.
        const leaving = dead.filter((_, i) => i % 2 === 0);
        const [batches, leaves] = await Promise.all([
          Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? peer : store).takeLapsed(now, 2 + (i % 4)))),
          Promise.all(
            leaving.map((name, i) => {
              const [app = '', group = '', page = ''] = name.split('/');
              return (i % 2 ? peer : store).leave(app, group, page);
            }),
          ),
        ]);
        const taken = names(batches.flat());
        // Whatever the racers left, later sweeps take.
        for (;;) {
          const more = await store.takeLapsed(now, 5);
          if (more.length === 0) break;
          taken.push(...names(more));
        }
        const left = leaving.filter((_, i) => leaves[i] !== undefined);
        expect([...taken, ...left].sort()).toEqual([...dead].sort());
        for (let g = 0; g < 4; g++) {
          expect((await store.members('app1', `g${g}`)).every((m) => !m.page.startsWith('nx.'))).toBe(true);
        }
      });
    });

    describe('apps and groups', () => {
      it('keeps the groups of each app, and each group, apart', async () => {
        const store = await make();
        const one = member('na.1', 'ann');
        const two = member('na.1', 'ann', { media: ['video'], joinedAt: T0 + 7 });
        // The same page in a group of two apps, and in two groups of one app.
        expect(await store.join('app1', 'g', one, 1)).toStrictEqual([]);
        expect(await store.join('app2', 'g', two, 1)).toStrictEqual([]);
        expect(await store.join('app1', 'h', two, 1)).toStrictEqual([]);
        expect(await store.members('app1', 'g')).toStrictEqual([one]);
        expect(await store.members('app2', 'g')).toStrictEqual([two]);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
        expect(await store.leave('app2', 'g', 'na.1')).toStrictEqual(two);
        expect(await store.members('app1', 'g')).toStrictEqual([one]);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
        expect(await store.leave('app1', 'g', 'na.1')).toStrictEqual(one);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
        // Each app's lapsed members come back with their app and group.
        await store.join('app3', 'g', member('nz.1'), 1);
        await store.join('app3', 'k', member('nz.2'), 1);
        expect(names(await store.takeLapsed(T0, 10))).toEqual(['app3/g/nz.1', 'app3/k/nz.2']);
        expect(await store.members('app1', 'h')).toStrictEqual([two]);
      });
    });
  });
}
