/**
 * The CallStore contract as one test suite, run by every engine's runner file.
 * Time is never read from the clock: every call gets its times, so the suite moves time by hand.
 *
 * What ends a call (`end`, `takeMissed`, `takeNode`) and what claims a user (`place`, `answer`) must reach
 * exactly one caller; with a `peer` (a second store on the same backend, as on another node) the
 * suite races both against each other. Stores, clock and racing helpers: ./harness.ts.
 *
 * @example
 * ```ts
 * callStoreContract('MemoryCallStore', inProcess(() => new MemoryCallStore()));
 * ```
 */
import { describe, expect, it } from 'vitest';
import type { CallRecord, CallStore } from '../types.js';
import { drain, freshStores, type MakeStores, raceEach, T0 } from './harness.js';

const RING = 30_000;

let calls = 0;

/** A ringing call from `from` (page on node `na`) to `to`, placed at T0. */
function ringing(from: string, to: string, more: Partial<CallRecord> = {}): CallRecord {
  const id = `call-${++calls}`;
  return {
    app: 'app1',
    id,
    name: id,
    from,
    to,
    media: ['audio'],
    fromPage: 'na.1',
    startedAt: T0,
    ringUntil: T0 + RING,
    ...more,
  };
}

/** Ids of taken calls, sorted: takeMissed and takeNode promise no order. */
const ids = (taken: readonly CallRecord[]) => taken.map((call) => call.id).sort();

export function callStoreContract(name: string, makeStore: MakeStores<CallStore>): void {
  describe(`CallStore contract: ${name}`, () => {
    const fresh = freshStores(makeStore);

    describe('place', () => {
      it('stores a ringing call: get and callOf of both users answer it, every field as placed', async () => {
        const { store, peer } = await fresh.nodes();
        const call = ringing('ann:1', 'bob.ü', { media: ['audio', 'video'], name: 'Sales: Ann → Bob' });
        expect(await store.place(call)).toBe('placed');
        for (const s of [store, peer]) {
          // Strict: toPage and answeredAt are absent while it rings, not undefined.
          expect(await s.get('app1', call.id)).toStrictEqual(call);
          expect(await s.callOf('app1', 'ann:1')).toStrictEqual(call);
          expect(await s.callOf('app1', 'bob.ü')).toStrictEqual(call);
        }
        expect(await store.callOf('app1', 'cat')).toBeUndefined();
        expect(await store.get('app1', 'no-such-call')).toBeUndefined();
      });

      it('keeps its own copy: changing a record given or answered changes nothing stored', async () => {
        const store = await fresh.store();
        const call = ringing('ann', 'bob', { media: ['audio'] });
        const placed = structuredClone(call);
        await store.place(call);
        call.media.push('video');
        call.name = 'changed';
        const got = await store.get('app1', call.id);
        expect(got).toStrictEqual(placed);
        got?.media.push('video');
        expect(await store.get('app1', call.id)).toStrictEqual(placed);
      });

      it('answers in_call when the caller is in a call, as caller or callee, and stores nothing', async () => {
        const store = await fresh.store();
        const first = ringing('ann', 'bob');
        expect(await store.place(first)).toBe('placed');
        // Ann rings Bob: neither may call anyone else.
        const byCaller = ringing('ann', 'cat');
        const byCallee = ringing('bob', 'cat');
        expect(await store.place(byCaller)).toBe('in_call');
        expect(await store.place(byCallee)).toBe('in_call');
        // Answered: still in a call.
        await store.answer('app1', first.id, 'nb.1', T0 + 1000);
        const later = ringing('bob', 'dan');
        expect(await store.place(later)).toBe('in_call');
        for (const call of [byCaller, byCallee, later]) expect(await store.get('app1', call.id)).toBeUndefined();
        expect(await store.callOf('app1', 'cat')).toBeUndefined();
        expect(await store.callOf('app1', 'dan')).toBeUndefined();
        expect((await store.callOf('app1', 'ann'))?.id).toBe(first.id);
      });

      it('answers busy when the callee is in a call, ringing or answered, and stores nothing', async () => {
        const store = await fresh.store();
        const first = ringing('ann', 'bob');
        await store.place(first);
        const toCaller = ringing('cat', 'ann');
        const toCallee = ringing('cat', 'bob');
        expect(await store.place(toCaller)).toBe('busy');
        expect(await store.place(toCallee)).toBe('busy');
        await store.answer('app1', first.id, 'nb.1', T0 + 1000);
        const answered = ringing('dan', 'bob');
        expect(await store.place(answered)).toBe('busy');
        for (const call of [toCaller, toCallee, answered]) expect(await store.get('app1', call.id)).toBeUndefined();
        expect(await store.callOf('app1', 'cat')).toBeUndefined();
        expect(await store.callOf('app1', 'dan')).toBeUndefined();
        // The call they were turned away from is as it was.
        expect((await store.callOf('app1', 'bob'))?.toPage).toBe('nb.1');
      });

      it('answers in_call, not busy, when both users are in calls', async () => {
        const store = await fresh.store();
        await store.place(ringing('ann', 'bob'));
        await store.place(ringing('cat', 'dan'));
        expect(await store.place(ringing('ann', 'cat'))).toBe('in_call');
      });

      it('lets one of many racing places from two nodes claim a user', async () => {
        const { store, peer, node } = await fresh.nodes();
        // Ten callers ring Bob at once, half through each node: one gets through.
        const toBob = Array.from({ length: 10 }, (_, i) => ringing(`caller${i}`, 'bob'));
        const outcomes = await raceEach(node, toBob, (s, call) => s.place(call));
        expect(outcomes.filter((o) => o === 'placed')).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'busy')).toHaveLength(9);
        const winner = toBob[outcomes.indexOf('placed')];
        expect((await peer.callOf('app1', 'bob'))?.id).toBe(winner?.id);
        // Ann rings ten people at once: one call is hers.
        const byAnn = Array.from({ length: 10 }, (_, i) => ringing('ann', `callee${i}`));
        const placed = await raceEach(node, byAnn, (s, call) => s.place(call));
        expect(placed.filter((o) => o === 'placed')).toHaveLength(1);
        expect(placed.filter((o) => o === 'in_call')).toHaveLength(9);
        const called = byAnn.filter((_, i) => placed[i] === 'in_call');
        for (const call of called) expect(await store.callOf('app1', call.to)).toBeUndefined();
      });
    });

    describe('answer', () => {
      it('answers a ringing call once, on the page that accepted', async () => {
        const { store, peer } = await fresh.nodes();
        const call = ringing('ann', 'bob');
        await store.place(call);
        const answered = await peer.answer('app1', call.id, 'nb.7', T0 + 2500);
        const expected = { ...call, toPage: 'nb.7', answeredAt: T0 + 2500 };
        expect(answered).toStrictEqual(expected);
        for (const s of [store, peer]) {
          expect(await s.get('app1', call.id)).toStrictEqual(expected);
          expect(await s.callOf('app1', 'ann')).toStrictEqual(expected);
          expect(await s.callOf('app1', 'bob')).toStrictEqual(expected);
        }
        // A second page of the callee accepting too: no longer ringing.
        expect(await store.answer('app1', call.id, 'na.9', T0 + 3000)).toBeUndefined();
        expect(await store.get('app1', call.id)).toStrictEqual(expected);
      });

      it('answers undefined for a call that is gone or never was', async () => {
        const store = await fresh.store();
        const call = ringing('ann', 'bob');
        await store.place(call);
        await store.end('app1', call.id);
        expect(await store.answer('app1', call.id, 'nb.1', T0 + 1000)).toBeUndefined();
        expect(await store.answer('app1', 'no-such-call', 'nb.1', T0 + 1000)).toBeUndefined();
        expect(await store.get('app1', call.id)).toBeUndefined();
        expect(await store.get('app1', 'no-such-call')).toBeUndefined();
      });

      it('lets one of many racing answers from two nodes win', async () => {
        const { store, node } = await fresh.nodes();
        for (let round = 0; round < 10; round++) {
          const call = ringing(`ann${round}`, `bob${round}`);
          await store.place(call);
          const pages = Array.from({ length: 6 }, (_, i) => `${i % 2 ? 'nb' : 'na'}.${i}`);
          const answers = await raceEach(node, pages, (s, page, i) => s.answer('app1', call.id, page, T0 + 1000 + i));
          const won = answers.filter((a) => a !== undefined);
          expect(won).toHaveLength(1);
          expect(await store.get('app1', call.id)).toStrictEqual(won[0]);
        }
      });
    });

    describe('end', () => {
      it('removes the call and answers its record once; both users may call again', async () => {
        const { store, peer } = await fresh.nodes();
        const call = ringing('ann', 'bob');
        await store.place(call);
        await store.answer('app1', call.id, 'nb.1', T0 + 1000);
        expect(await peer.end('app1', call.id)).toStrictEqual({ ...call, toPage: 'nb.1', answeredAt: T0 + 1000 });
        expect(await store.end('app1', call.id)).toBeUndefined();
        expect(await peer.end('app1', call.id)).toBeUndefined();
        for (const s of [store, peer]) {
          expect(await s.get('app1', call.id)).toBeUndefined();
          expect(await s.callOf('app1', 'ann')).toBeUndefined();
          expect(await s.callOf('app1', 'bob')).toBeUndefined();
        }
        // Free again, either way round and with others.
        expect(await store.place(ringing('bob', 'ann'))).toBe('placed');
        expect(await store.place(ringing('cat', 'dan'))).toBe('placed');
      });

      it('ends a ringing call (cancelled, rejected) as well', async () => {
        const store = await fresh.store();
        const call = ringing('ann', 'bob');
        await store.place(call);
        expect(await store.end('app1', call.id)).toStrictEqual(call);
        expect(await store.place(ringing('ann', 'bob'))).toBe('placed');
        expect(await store.end('app1', 'no-such-call')).toBeUndefined();
      });

      it('hands the record to exactly one of many racing ends from two nodes', async () => {
        const { store, peer, node } = await fresh.nodes();
        const placed: CallRecord[] = [];
        for (let i = 0; i < 20; i++) {
          const call = ringing(`ann${i}`, `bob${i}`);
          await store.place(call);
          if (i % 2) await peer.answer('app1', call.id, 'nb.1', T0 + 1000);
          placed.push(call);
        }
        // Four ends of each call, two through each node.
        const fourEach = placed.flatMap((call) => [call, call, call, call]);
        const ends = await raceEach(node, fourEach, (s, call) => s.end('app1', call.id));
        const records = ends.filter((r) => r !== undefined);
        expect(records.map((r) => r.id).sort()).toEqual(placed.map((c) => c.id).sort());
      });

      it('hands a call to exactly one of ends and sweeps racing', async () => {
        const { store, peer, node } = await fresh.nodes();
        const placed: CallRecord[] = [];
        for (let i = 0; i < 20; i++) {
          const call = ringing(`ann${i}`, `bob${i}`);
          await store.place(call);
          placed.push(call);
        }
        // Every call rang out: a sweep on each node and an end for each call, all at once.
        const now = T0 + RING + 1;
        const [a, b, ...ends] = await Promise.all([
          store.takeMissed(now, 100),
          peer.takeMissed(now, 100),
          ...placed.map((call, i) => node(i).end('app1', call.id)),
        ]);
        const swept = [...(a as CallRecord[]), ...(b as CallRecord[])].map((call) => call.id);
        const ended = (ends as (CallRecord | undefined)[]).filter((r) => r !== undefined).map((r) => r.id);
        expect([...swept, ...ended].sort()).toEqual(placed.map((c) => c.id).sort());
      });
    });

    describe('takeMissed', () => {
      it('takes a call still ringing after ringUntil, once; the users are free again', async () => {
        const { store, peer } = await fresh.nodes();
        const call = ringing('ann', 'bob');
        await store.place(call);
        expect(await store.takeMissed(T0 + RING - 1, 10)).toEqual([]);
        expect(await store.get('app1', call.id)).toStrictEqual(call);
        expect(await peer.takeMissed(T0 + RING + 1, 10)).toStrictEqual([call]);
        expect(await store.takeMissed(T0 + RING + 1, 10)).toEqual([]);
        expect(await peer.takeMissed(T0 + RING + 2, 10)).toEqual([]);
        expect(await store.get('app1', call.id)).toBeUndefined();
        expect(await store.end('app1', call.id)).toBeUndefined();
        expect(await store.answer('app1', call.id, 'nb.1', T0 + RING + 2)).toBeUndefined();
        expect(await store.callOf('app1', 'ann')).toBeUndefined();
        expect(await store.callOf('app1', 'bob')).toBeUndefined();
        expect(await store.place(ringing('bob', 'ann'))).toBe('placed');
      });

      it('never takes an answered call', async () => {
        const store = await fresh.store();
        const call = ringing('ann', 'bob');
        await store.place(call);
        await store.answer('app1', call.id, 'nb.1', T0 + 1000);
        expect(await store.takeMissed(T0 + RING + 1, 10)).toEqual([]);
        expect(await store.takeMissed(T0 + 10 * RING, 10)).toEqual([]);
        expect((await store.get('app1', call.id))?.toPage).toBe('nb.1');
      });

      it('takes nothing of a call that ended already', async () => {
        const store = await fresh.store();
        const rung = ringing('ann', 'bob');
        await store.place(rung);
        await store.end('app1', rung.id);
        expect(await store.takeMissed(T0 + 10 * RING, 10)).toEqual([]);
      });

      it('takes at most `limit` calls a time, the rest later', async () => {
        const store = await fresh.store();
        const due: string[] = [];
        for (let i = 0; i < 5; i++) {
          const call = ringing(`ann${i}`, `bob${i}`);
          await store.place(call);
          due.push(call.id);
        }
        const now = T0 + RING + 1;
        expect(await store.takeMissed(now, 0)).toEqual([]);
        const taken: CallRecord[] = [];
        for (const size of [2, 2, 1]) {
          const batch = await store.takeMissed(now, 2);
          expect(batch).toHaveLength(size);
          taken.push(...batch);
        }
        expect(await store.takeMissed(now, 2)).toEqual([]);
        expect(ids(taken)).toEqual(due.sort());
      });
    });

    describe('takeNode', () => {
      it("takes the calls with the caller's page on the node, ringing or answered, once each", async () => {
        const { store, peer } = await fresh.nodes();
        const rings = ringing('ann', 'bob', { fromPage: 'nx.1' });
        const talks = ringing('cat', 'dan', { fromPage: 'nx.2' });
        const safe = ringing('eve', 'fay', { fromPage: 'na.3' });
        for (const call of [rings, talks, safe]) await store.place(call);
        await peer.answer('app1', talks.id, 'nb.4', T0 + 1000);
        await peer.answer('app1', safe.id, 'nb.5', T0 + 1000);
        const taken = await peer.takeNode('nx', 10);
        expect(ids(taken)).toEqual([rings.id, talks.id].sort());
        expect(taken.find((call) => call.id === talks.id)).toStrictEqual({
          ...talks,
          toPage: 'nb.4',
          answeredAt: T0 + 1000,
        });
        expect(await store.takeNode('nx', 10)).toEqual([]);
        // The other nodes' call stays, however late.
        expect(await store.takeMissed(T0 + 10 * RING, 10)).toEqual([]);
        expect((await store.get('app1', safe.id))?.toPage).toBe('nb.5');
        for (const user of ['ann', 'bob', 'cat', 'dan']) expect(await store.callOf('app1', user)).toBeUndefined();
        expect(await store.place(ringing('bob', 'ann'))).toBe('placed');
      });

      it("takes a call with the callee's page on the node", async () => {
        const { store, peer } = await fresh.nodes();
        const call = ringing('ann', 'bob');
        await store.place(call);
        await peer.answer('app1', call.id, 'ny.1', T0 + 1000);
        expect(await store.takeNode('nz', 10)).toEqual([]);
        expect(await store.takeNode('ny', 10)).toStrictEqual([{ ...call, toPage: 'ny.1', answeredAt: T0 + 1000 }]);
        expect(await store.takeNode('na', 10)).toEqual([]);
      });

      it('takes nothing of a call that ended already, or of a node with none', async () => {
        const store = await fresh.store();
        const failed = ringing('cat', 'dan', { fromPage: 'nx.1' });
        await store.place(failed);
        await store.end('app1', failed.id);
        expect(await store.takeNode('nx', 10)).toEqual([]);
        expect(await store.takeNode('never', 10)).toEqual([]);
      });

      it('takes at most `limit` calls a time, the rest later', async () => {
        const store = await fresh.store();
        const due: string[] = [];
        for (let i = 0; i < 5; i++) {
          const call = ringing(`cat${i}`, `dan${i}`, { fromPage: `nx.${i}` });
          await store.place(call);
          due.push(call.id);
        }
        expect(await store.takeNode('nx', 0)).toEqual([]);
        const taken: CallRecord[] = [];
        for (const size of [2, 2, 1]) {
          const batch = await store.takeNode('nx', 2);
          expect(batch).toHaveLength(size);
          taken.push(...batch);
        }
        expect(await store.takeNode('nx', 2)).toEqual([]);
        expect(ids(taken)).toEqual(due.sort());
      });

      it('hands each call to exactly one of many racing takers, rings, and ends on two nodes', async () => {
        const { store, peer, node } = await fresh.nodes();
        const placed: string[] = [];
        for (let i = 0; i < 30; i++) {
          const call = ringing(`ann${i}`, `bob${i}`, i % 3 === 0 ? {} : { fromPage: `nx.${i}` });
          await node(i).place(call);
          if (i % 5 === 0) await peer.answer('app1', call.id, 'nx.99', T0 + 1000);
          placed.push(call.id);
        }
        const now = T0 + RING + 1;
        const batches = await Promise.all([
          ...Array.from({ length: 8 }, (_, i) => node(i).takeNode('nx', 3 + (i % 4))),
          ...Array.from({ length: 4 }, (_, i) => node(i).takeMissed(now, 3 + i)),
          ...placed.slice(0, 6).map(async (id, i) => {
            const ended = await node(i).end('app1', id);
            return ended ? [ended] : [];
          }),
        ]);
        const taken = batches.flat();
        // Whatever the racers left, later sweeps take.
        taken.push(
          ...(await drain(async () => [...(await store.takeNode('nx', 5)), ...(await store.takeMissed(now, 5))])),
        );
        expect(ids(taken)).toEqual([...placed].sort());
      });
    });

    describe('apps', () => {
      it('keeps the calls and users of each app apart', async () => {
        const store = await fresh.store();
        const one = ringing('ann', 'bob', { id: 'same-id' });
        const two = ringing('ann', 'bob', { id: 'same-id', app: 'app2', name: 'other', media: ['video'] });
        expect(await store.place(one)).toBe('placed');
        expect(await store.place(two)).toBe('placed');
        expect(await store.get('app1', 'same-id')).toStrictEqual(one);
        expect(await store.get('app2', 'same-id')).toStrictEqual(two);
        expect(await store.callOf('app2', 'bob')).toStrictEqual(two);
        const answered = await store.answer('app2', 'same-id', 'nb.1', T0 + 1000);
        expect(answered?.app).toBe('app2');
        expect(await store.get('app1', 'same-id')).toStrictEqual(one);
        expect(await store.end('app1', 'same-id')).toStrictEqual(one);
        expect(await store.get('app2', 'same-id')).toStrictEqual({ ...two, toPage: 'nb.1', answeredAt: T0 + 1000 });
        expect(await store.callOf('app2', 'ann')).toBeDefined();
        expect(await store.callOf('app1', 'ann')).toBeUndefined();
        // Each app's lapsed calls come back with their app.
        const three = ringing('cat', 'dan', { app: 'app3' });
        await store.place(three);
        expect(await store.takeMissed(T0 + RING + 1, 10)).toStrictEqual([three]);
      });
    });
  });
}
