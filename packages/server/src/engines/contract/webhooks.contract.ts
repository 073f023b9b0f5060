/**
 * The WebhookStore contract as one test suite. Every implementation (SQLite now, Redis later) runs
 * it through a runner file next to the implementation:
 *
 * @example
 * ```ts
 * webhookContract('SqliteWebhookStore', async () => {
 *   const dir = mkdtempSync(join(tmpdir(), 'webhooks-'));
 *   let db = openDb(dir);
 *   const other = openDb(dir);
 *   return {
 *     store: new SqliteWebhookStore(db),
 *     peer: new SqliteWebhookStore(other),
 *     reopen: async () => { db.close(); db = openDb(dir); return new SqliteWebhookStore(db); },
 *     cleanup: async () => { db.close(); other.close(); rmSync(dir, { recursive: true, force: true }); },
 *   };
 * });
 * ```
 *
 * Time is never read from the clock: every call gets `now`, so the suite moves time by hand. The
 * suite only uses the interface (no SQL, no keys), and every call is awaited.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredBatch, TryOutcome, WebhookStore } from '../types.js';

export interface WebhookHarness {
  /** A store with nothing in it. */
  store: WebhookStore;
  /**
   * A second store on the same data, as another process or node opens it (SQLite: a second
   * connection to the file; Redis: a second client). Without it the sharing tests run on one store.
   */
  peer?: WebhookStore;
  /**
   * Closes the store and opens a new one on the same data, as a restart would. Without it the
   * restart test runs against the same store.
   */
  reopen?: () => Promise<WebhookStore>;
  /** Closes whatever is open (including a reopened store and the peer) and removes the data. */
  cleanup(): Promise<void>;
}

/** An arbitrary fixed "now". */
const T0 = 1_700_000_000_000;
const LEASE = 10_000;
const A = { holder: 'node-a', ms: LEASE };
const B = { holder: 'node-b', ms: LEASE };

/** An event's stored JSON text, as the webhook queue writes it (`at` is what stats read). */
const ev = (n: number | string, at = T0) => `{"id":"ev_${n}","at":${at},"type":"user.online","user":"u${n}"}`;
const bodyOf = (events: readonly string[]) => `{"events":[${events.join(',')}]}`;
/** The event ids in a batch's body, in order. */
const idsIn = (batch: StoredBatch) =>
  (JSON.parse(batch.body) as { events: { id: string }[] }).events.map((event) => event.id);

export function webhookContract(name: string, makeStore: () => Promise<WebhookHarness>): void {
  describe(`WebhookStore contract: ${name}`, () => {
    let harness: WebhookHarness;
    let store: WebhookStore;
    /** The peer, or the same store when the harness has none. */
    let peer: WebhookStore;

    beforeEach(async () => {
      harness = await makeStore();
      store = harness.store;
      peer = harness.peer ?? store;
    });

    afterEach(async () => {
      await harness.cleanup();
    });

    /** A pending batch of the app's waiting events, formed at `now`. */
    async function formed(app: string, id: string, now = T0, max = 100): Promise<StoredBatch> {
      const batch = await store.formBatch(app, id, max, now);
      if (!batch) throw new Error(`no batch formed for ${app}`);
      return batch;
    }

    /** Records a failed scheduled try by `holder`: the batch is retried at `nextAt`. */
    async function failed(batch: StoredBatch, holder: string, at: number, nextAt: number): Promise<StoredBatch> {
      const next: StoredBatch = {
        ...batch,
        state: 'retrying',
        attempts: batch.attempts + 1,
        failed: batch.failed + 1,
        status: 500,
        error: null,
        firstTryAt: batch.firstTryAt ?? at,
        at,
        nextAt,
      };
      await store.saveTry(next, holder);
      return next;
    }

    describe('events and batches', () => {
      it('holds nothing at first', async () => {
        expect(await store.waiting()).toEqual(new Map());
        expect(await store.formBatch('app1', 'b_1', 100, T0)).toBe(undefined);
        expect(await store.get('b_1')).toBe(undefined);
        expect(await store.list('app1', 100)).toEqual([]);
        expect(await store.claimDue(T0, 10, A)).toEqual([]);
        expect(await store.claim('b_1', T0, A)).toBe(undefined);
      });

      it('counts waiting events per app', async () => {
        for (let i = 0; i < 3; i++) await store.addEvent('app1', ev(i));
        await store.addEvent('app2', ev('x'));
        expect(await store.waiting()).toEqual(
          new Map([
            ['app1', 3],
            ['app2', 1],
          ]),
        );
      });

      it('forms batches of the oldest events, in order, at most max, due at once', async () => {
        const events = Array.from({ length: 5 }, (_, i) => ev(i));
        for (const json of events) await store.addEvent('app1', json);
        await store.addEvent('app2', ev('other'));

        const first = await formed('app1', 'b_1', T0, 3);
        expect(first).toEqual({
          id: 'b_1',
          app: 'app1',
          body: bodyOf(events.slice(0, 3)),
          events: 3,
          state: 'pending',
          attempts: 0,
          failed: 0,
          status: 0,
          error: null,
          createdAt: T0,
          firstTryAt: null,
          at: null,
          nextAt: T0,
          doneAt: null,
        } satisfies StoredBatch);
        expect((await store.waiting()).get('app1')).toBe(2);

        const second = await formed('app1', 'b_2', T0 + 1, 3);
        expect(second.body).toBe(bodyOf(events.slice(3)));
        expect(second.events).toBe(2);
        expect(await store.formBatch('app1', 'b_3', 3, T0 + 2)).toBe(undefined);
        // The other app's events stay waiting.
        expect(await store.waiting()).toEqual(new Map([['app2', 1]]));
        expect(await store.get('b_1')).toEqual(first);
      });

      it('keeps the exact text of every event in the body', async () => {
        const odd = [
          '{"id":"ev_u","at":1,"type":"emit","data":{"t":"é\\u2028😀\\"","n":12345678901234567890,"z":1.0}}',
          '{"id":"ev_s","at":2,"type":"emit","data":"  spaced  ","event_id":"1-0"}',
        ];
        for (const json of odd) await store.addEvent('app1', json);
        const batch = await formed('app1', 'b_1');
        expect(batch.body).toBe(bodyOf(odd));
        expect((await store.get('b_1'))?.body).toBe(bodyOf(odd));
      });

      it('puts each event into exactly one batch when two stores form batches at once', async () => {
        const count = 250;
        const adds: Promise<void>[] = [];
        for (let i = 0; i < count; i++)
          adds.push(Promise.resolve((i % 2 === 0 ? store : peer).addEvent('app1', ev(i))));
        await Promise.all(adds);

        const batches: StoredBatch[] = [];
        let n = 0;
        for (;;) {
          // Both sides ask at once, several times over.
          const round = await Promise.all(
            [store, peer, store, peer].map((s) => s.formBatch('app1', `b_${n++}`, 7, T0)),
          );
          const made = round.filter((b): b is StoredBatch => b !== undefined);
          batches.push(...made);
          if (made.length === 0) break;
        }
        const seen = batches.flatMap(idsIn);
        expect(seen).toHaveLength(count);
        expect(new Set(seen).size).toBe(count);
        for (const batch of batches) {
          expect(batch.events).toBeLessThanOrEqual(7);
          // Within a batch, in the order each store added them (two connections at once have no
          // order between them).
          const numbers = idsIn(batch).map((id) => Number(id.slice(3)));
          for (const side of [0, 1]) {
            const mine = numbers.filter((x) => x % 2 === side);
            expect(mine).toEqual([...mine].sort((x, y) => x - y));
          }
        }
        expect(await store.waiting()).toEqual(new Map());
      });

      it('stores a batch of given events leased to its holder (the test webhook)', async () => {
        const batch = await store.addBatch('app1', 'b_t', [ev('t')], T0, A);
        expect(batch).toMatchObject({
          id: 'b_t',
          app: 'app1',
          body: bodyOf([ev('t')]),
          events: 1,
          state: 'pending',
          attempts: 0,
          nextAt: T0,
          doneAt: null,
        });
        // Due, but leased: nobody claims it while the lease runs.
        expect(await peer.claimDue(T0 + 1, 10, B)).toEqual([]);
        expect(await peer.claim('b_t', T0 + 1, B)).toBe('busy');
        // The holder's try ends the lease.
        const taken = { ...batch, state: 'taken', attempts: 1, status: 204, at: T0 + 5, firstTryAt: T0 + 5 };
        await store.saveTry({ ...taken, nextAt: null, doneAt: T0 + 5 } as StoredBatch, A.holder);
        expect(await peer.claim('b_t', T0 + 6, B)).toMatchObject({ id: 'b_t', state: 'taken' });
      });
    });

    describe('leases', () => {
      it('leases due batches oldest due first, up to the limit, and not the ones not due', async () => {
        for (const [i, app] of ['app1', 'app2', 'app3'].entries()) {
          await store.addEvent(app, ev(i));
          await formed(app, `b_${i}`, T0 + i);
        }
        // b_0 fails and is due again later than b_1 and b_2.
        const [zero] = await store.claimDue(T0, 1, A);
        expect(zero?.id).toBe('b_0');
        if (!zero) throw new Error('unreachable');
        await failed(zero, A.holder, T0 + 10, T0 + 100);

        expect((await store.claimDue(T0 + 20, 1, A)).map((b) => b.id)).toEqual(['b_1']);
        expect((await store.claimDue(T0 + 20, 10, A)).map((b) => b.id)).toEqual(['b_2']);
        // b_0 is not due before T0 + 100.
        expect(await store.claimDue(T0 + 99, 10, B)).toEqual([]);
        const again = await peer.claimDue(T0 + 100, 10, B);
        expect(again.map((b) => b.id)).toEqual(['b_0']);
        expect(again[0]).toMatchObject({ state: 'retrying', attempts: 1, failed: 1, status: 500, nextAt: T0 + 100 });
      });

      it('gives a leased batch to nobody else until the holder saves a try or the lease ends', async () => {
        await store.addEvent('app1', ev(1));
        await formed('app1', 'b_1');
        expect((await store.claimDue(T0, 10, A)).map((b) => b.id)).toEqual(['b_1']);
        expect(await peer.claimDue(T0 + 1, 10, B)).toEqual([]);
        expect(await peer.claimDue(T0 + LEASE - 1, 10, B)).toEqual([]);
        // The holder died: at the end of its lease the batch goes to another.
        const taken = await peer.claimDue(T0 + LEASE, 10, B);
        expect(taken.map((b) => b.id)).toEqual(['b_1']);
        expect(await store.claimDue(T0 + LEASE + 1, 10, A)).toEqual([]);

        // Saving a try ends the lease at once.
        const batch = taken[0] as StoredBatch;
        await peer.saveTry({ ...batch, state: 'retrying', attempts: 1, failed: 1, at: T0 + LEASE + 2 }, B.holder);
        expect((await store.claimDue(T0 + LEASE + 3, 10, A)).map((b) => b.id)).toEqual(['b_1']);
      });

      it('leases each due batch to one holder when two claim at once', async () => {
        for (let i = 0; i < 40; i++) {
          await store.addEvent(`app${i % 4}`, ev(i));
          await formed(`app${i % 4}`, `b_${i}`, T0 + i);
        }
        const claimers = [store, peer, store, peer, store, peer];
        const rounds = await Promise.all(
          claimers.map((s, i) => s.claimDue(T0 + 100, 5, { holder: `node-${i}`, ms: LEASE })),
        );
        const ids = rounds.flat().map((b) => b.id);
        expect(ids).toHaveLength(30);
        expect(new Set(ids).size).toBe(30);
        // The rest is still there for the next claimer.
        expect(await store.claimDue(T0 + 100, 100, A)).toHaveLength(10);
      });

      it('claims one batch whatever its schedule: busy while a lease runs, undefined when unknown', async () => {
        await store.addEvent('app1', ev(1));
        const batch = await formed('app1', 'b_1');
        const [leased] = await store.claimDue(T0, 1, A);
        await failed(leased as StoredBatch, A.holder, T0 + 1, T0 + 5000);

        // Not due, yet claimed (a resend).
        const claimed = await peer.claim('b_1', T0 + 2, B);
        expect(claimed).toMatchObject({ id: 'b_1', state: 'retrying', attempts: 1, nextAt: T0 + 5000 });
        expect(await store.claim('b_1', T0 + 3, A)).toBe('busy');
        // A claimed batch is not due for anyone, even when its time comes, while the lease runs.
        expect(await store.claimDue(T0 + 5000, 10, A)).toEqual([]);
        expect(await store.claim('b_nope', T0 + 3, A)).toBe(undefined);
        // The lease ends: another holder gets it.
        expect(await store.claim('b_1', T0 + 2 + LEASE, A)).toMatchObject({ id: batch.id });
      });

      it('drops a try saved by a holder whose lease went to another', async () => {
        await store.addEvent('app1', ev(1));
        await formed('app1', 'b_1');
        const [first] = await store.claimDue(T0, 1, A);
        // A's lease runs out mid-try; B takes the batch and gets it taken.
        const [second] = await peer.claimDue(T0 + LEASE, 1, B);
        expect(second?.id).toBe('b_1');
        await failed(first as StoredBatch, A.holder, T0 + LEASE + 1, T0 + LEASE + 500);
        expect(await store.get('b_1')).toMatchObject({ state: 'pending', attempts: 0 });
        expect(await store.claim('b_1', T0 + LEASE + 2, A)).toBe('busy');
        const done = T0 + LEASE + 3;
        await peer.saveTry(
          {
            ...(second as StoredBatch),
            state: 'taken',
            attempts: 1,
            status: 200,
            at: done,
            nextAt: null,
            doneAt: done,
          },
          B.holder,
        );
        expect(await store.get('b_1')).toMatchObject({ state: 'taken', attempts: 1, status: 200, doneAt: done });
      });

      it('hands a batch back untouched when the holder saves it as claimed', async () => {
        await store.addEvent('app1', ev(1));
        const batch = await formed('app1', 'b_1');
        const [claimed] = await store.claimDue(T0, 1, A);
        await store.saveTry(claimed as StoredBatch, A.holder);
        expect(await store.get('b_1')).toEqual(batch);
        expect((await peer.claimDue(T0 + 1, 1, B)).map((b) => b.id)).toEqual(['b_1']);
      });
    });

    describe('tries', () => {
      it('records each state a try leads to', async () => {
        for (let i = 0; i < 3; i++) {
          await store.addEvent('app1', ev(i));
          await formed('app1', `b_${i}`, T0);
        }
        const claimed = await store.claimDue(T0, 3, A);
        const [zero, one, two] = claimed;
        if (!zero || !one || !two) throw new Error('three batches were due');

        await store.saveTry(
          {
            ...zero,
            state: 'retrying',
            attempts: 1,
            failed: 1,
            status: 0,
            error: 'timeout',
            firstTryAt: T0 + 1,
            at: T0 + 1,
            nextAt: T0 + 5000,
          },
          A.holder,
        );
        await store.saveTry(
          {
            ...one,
            state: 'taken',
            attempts: 1,
            status: 204,
            firstTryAt: T0 + 2,
            at: T0 + 2,
            nextAt: null,
            doneAt: T0 + 2,
          },
          A.holder,
        );
        await store.saveTry(
          {
            ...two,
            state: 'given_up',
            attempts: 9,
            failed: 9,
            status: 503,
            error: null,
            firstTryAt: T0,
            at: T0 + 3,
            nextAt: null,
            doneAt: T0 + 3,
          },
          A.holder,
        );
        expect(await store.get('b_0')).toMatchObject({
          state: 'retrying',
          attempts: 1,
          failed: 1,
          status: 0,
          error: 'timeout',
          firstTryAt: T0 + 1,
          at: T0 + 1,
          nextAt: T0 + 5000,
          doneAt: null,
        });
        expect(await store.get('b_1')).toMatchObject({ state: 'taken', status: 204, nextAt: null, doneAt: T0 + 2 });
        expect(await store.get('b_2')).toMatchObject({ state: 'given_up', attempts: 9, failed: 9, doneAt: T0 + 3 });
        // Bodies never change.
        expect((await store.get('b_2'))?.body).toBe(bodyOf([ev(2)]));
        // Only the retrying one is ever due again.
        expect((await store.claimDue(T0 + 10 * 60_000, 10, A)).map((b) => b.id)).toEqual(['b_0']);
      });

      it('lists an app’s batches newest first, up to the limit', async () => {
        for (let i = 0; i < 5; i++) {
          await store.addEvent(i === 2 ? 'app2' : 'app1', ev(i));
          await formed(i === 2 ? 'app2' : 'app1', `b_${i}`, T0 + i);
        }
        expect((await store.list('app1', 100)).map((b) => b.id)).toEqual(['b_4', 'b_3', 'b_1', 'b_0']);
        expect((await store.list('app1', 2)).map((b) => b.id)).toEqual(['b_4', 'b_3']);
        expect((await store.list('app2', 100)).map((b) => b.id)).toEqual(['b_2']);
        expect(await store.list('app3', 100)).toEqual([]);
        // The same records as get.
        expect((await store.list('app2', 1))[0]).toEqual(await store.get('b_2'));
      });

      it('prunes batches done before a time, and nothing still under way', async () => {
        for (let i = 0; i < 4; i++) {
          await store.addEvent('app1', ev(i));
          await formed('app1', `b_${i}`, T0);
        }
        const claimed = await store.claimDue(T0, 4, A);
        const [zero, one, two] = claimed;
        if (!zero || !one || !two) throw new Error('batches were due');
        const done = (batch: StoredBatch, at: number): StoredBatch => ({
          ...batch,
          state: 'taken',
          attempts: 1,
          status: 200,
          at,
          firstTryAt: at,
          nextAt: null,
          doneAt: at,
        });
        await store.saveTry(done(zero, T0 + 10), A.holder);
        await store.saveTry(done(one, T0 + 20), A.holder);
        await failed(two, A.holder, T0 + 5, T0 + 1000);

        expect(await store.prune(T0 + 20)).toBe(1);
        expect(await store.get('b_0')).toBe(undefined);
        expect(await store.get('b_1')).toBeDefined();
        expect(await store.prune(T0 + 1_000_000)).toBe(1);
        expect((await store.list('app1', 100)).map((b) => b.id)).toEqual(['b_3', 'b_2']);
        expect(await store.prune(T0 + 1_000_000)).toBe(0);
      });
    });

    describe('tries by outcome', () => {
      const MIN = 60_000;
      const DAY = 24 * 3600_000;
      /** The start of T0's minute. */
      const M0 = Math.floor(T0 / MIN) * MIN;

      /** Leases the app's newest batch to `holder` and saves one try of it at `at`, counted as `outcome`. */
      async function tried(
        on: WebhookStore,
        id: string,
        holder: { holder: string; ms: number },
        at: number,
        outcome: TryOutcome,
        status = 500,
      ): Promise<void> {
        const claimed = await on.claim(id, at, holder);
        if (claimed === undefined || claimed === 'busy') throw new Error(`could not lease ${id}`);
        const error = status === 0 ? (outcome as StoredBatch['error']) : null;
        const next: StoredBatch = { ...claimed, state: 'retrying', attempts: claimed.attempts + 1, status, error, at };
        await on.saveTry({ ...next, nextAt: at + 1 }, holder.holder, outcome);
      }

      it('counts each try per app, minute and outcome; not a batch handed back or given up untried', async () => {
        expect(await store.tryCounts('app1', M0, T0)).toEqual([]);
        for (const [app, id] of [
          ['app1', 'b_1'],
          ['app1', 'b_2'],
          ['app2', 'b_3'],
        ] as const) {
          await store.addEvent(app, ev(id));
          await formed(app, id, T0);
        }
        await tried(store, 'b_1', A, T0 + 1, '5xx');
        await tried(store, 'b_1', A, T0 + 2, '5xx');
        await tried(store, 'b_2', A, T0 + 3, 'timeout', 0);
        await tried(store, 'b_2', A, M0 + MIN + 5, '2xx', 204);
        await tried(store, 'b_3', A, T0 + 4, '3xx', 302);
        // Handed back as claimed, and given up untried: no try was made.
        const back = await store.claim('b_1', T0 + 5, A);
        await store.saveTry(back as StoredBatch, A.holder);
        const overdue = await store.claim('b_1', T0 + 6, A);
        await store.saveTry({ ...(overdue as StoredBatch), state: 'given_up', nextAt: null, doneAt: T0 + 6 }, A.holder);

        const now = M0 + 5 * MIN;
        expect(await store.tryCounts('app1', M0, now)).toEqual([
          { at: M0, outcomes: { '5xx': 2, timeout: 1 } },
          { at: M0 + MIN, outcomes: { '2xx': 1 } },
        ]);
        expect(await peer.tryCounts('app2', M0 - 10 * MIN, now)).toEqual([{ at: M0, outcomes: { '3xx': 1 } }]);
        // From the minute holding `sinceMs`, up to `nowMs`.
        expect(await store.tryCounts('app1', M0 + MIN + 59_999, now)).toEqual([
          { at: M0 + MIN, outcomes: { '2xx': 1 } },
        ]);
        expect(await store.tryCounts('app1', M0, M0 + MIN - 1)).toEqual([
          { at: M0, outcomes: { '5xx': 2, timeout: 1 } },
        ]);
        expect(await store.tryCounts('app3', M0, now)).toEqual([]);
      });

      it('counts a try whose lease went to another holder: it reached the receiver', async () => {
        await store.addEvent('app1', ev(1));
        await formed('app1', 'b_1');
        const [first] = await store.claimDue(T0, 1, A);
        await peer.claimDue(T0 + LEASE, 1, B);
        await store.saveTry(
          {
            ...(first as StoredBatch),
            state: 'retrying',
            attempts: 1,
            status: 0,
            error: 'unreachable',
            at: T0 + LEASE + 1,
          },
          A.holder,
          'unreachable',
        );
        expect(await store.get('b_1')).toMatchObject({ attempts: 0 });
        const minute = Math.floor((T0 + LEASE + 1) / MIN) * MIN;
        expect(await store.tryCounts('app1', M0, T0 + LEASE + 1)).toEqual([
          { at: minute, outcomes: { unreachable: 1 } },
        ]);
      });

      it('adds up tries saved at once from two stores, and keeps counts for a day', async () => {
        const ids = Array.from({ length: 8 }, (_, i) => `b_${i}`);
        for (const id of ids) {
          await store.addEvent('app1', ev(id));
          await formed('app1', id, T0);
        }
        await Promise.all(
          ids.map((id, i) => tried(i % 2 === 0 ? store : peer, id, i % 2 === 0 ? A : B, T0 + i, '4xx', 404)),
        );
        expect(await store.tryCounts('app1', M0, T0 + 10)).toEqual([{ at: M0, outcomes: { '4xx': 8 } }]);
        // A day later the minute is still there; past a day it is not counted any more.
        expect(await peer.tryCounts('app1', M0 - DAY, M0 + DAY - 1)).toEqual([{ at: M0, outcomes: { '4xx': 8 } }]);
        expect(await peer.tryCounts('app1', M0 - DAY, M0 + DAY + MIN)).toEqual([]);
        // A try a day on forgets the old minutes (never counted again) and counts its own.
        await tried(store, 'b_0', A, M0 + DAY + MIN, '2xx', 200);
        expect(await store.tryCounts('app1', 0, M0 + DAY + MIN)).toEqual([
          { at: M0 + DAY + MIN, outcomes: { '2xx': 1 } },
        ]);
      });
    });

    describe('removing an app', () => {
      const MIN = 60_000;
      /** A try of a claimed batch saved at `at`, counted as a 5xx, retried a minute later. */
      async function triedOnce(batch: StoredBatch, at: number): Promise<StoredBatch> {
        const next: StoredBatch = {
          ...batch,
          state: 'retrying',
          attempts: 1,
          failed: 1,
          status: 500,
          at,
          nextAt: at + MIN,
        };
        await store.saveTry(next, A.holder, '5xx');
        return next;
      }

      it("drops the app's waiting events, batches and counted tries, and nothing of another app", async () => {
        for (const app of ['app1', 'app10']) {
          await store.addEvent(app, ev(`${app}_1`));
          await formed(app, `${app}_tried`, T0);
          await store.addEvent(app, ev(`${app}_2`));
          await formed(app, `${app}_pending`, T0 + 1);
          await store.addEvent(app, ev(`${app}_3`));
          const claimed = await store.claim(`${app}_tried`, T0 + 2, A);
          await triedOnce(claimed as StoredBatch, T0 + 2);
        }
        // A day's minutes of counted tries, the oldest one still read.
        const claimed = await store.claim('app1_tried', T0 + 23 * 3600_000, A);
        await triedOnce(claimed as StoredBatch, T0 + 23 * 3600_000);
        const now = T0 + 23 * 3600_000 + 1;
        expect(await store.tryCounts('app1', T0, now)).toHaveLength(2);
        const otherBefore = await store.list('app10', 10);

        await store.removeApp('app1', now);

        expect(await store.waiting()).toEqual(new Map([['app10', 1]]));
        expect(await store.list('app1', 10)).toEqual([]);
        expect(await store.get('app1_tried')).toBe(undefined);
        expect(await store.get('app1_pending')).toBe(undefined);
        expect(await store.claim('app1_pending', now, B)).toBe(undefined);
        expect(await store.tryCounts('app1', T0, now)).toEqual([]);
        expect(await store.formBatch('app1', 'app1_late', 100, now)).toBe(undefined);
        // Only the other app's batches are due, counted and kept.
        expect((await peer.claimDue(now + MIN, 10, B)).map((b) => b.id).sort()).toEqual([
          'app10_pending',
          'app10_tried',
        ]);
        expect(await store.list('app10', 10)).toEqual(otherBefore);
        expect(await store.tryCounts('app10', T0, now)).toEqual([
          { at: Math.floor((T0 + 2) / MIN) * MIN, outcomes: { '5xx': 1 } },
        ]);
        expect(await store.stats(now)).toEqual({
          waiting: 1,
          oldestWaitingMs: now - T0,
          batches: { pending: 1, retrying: 1 },
        });
      });

      it('writes nothing back for a try in flight when its app went, and takes the app anew after', async () => {
        await store.addEvent('app1', ev(1));
        await formed('app1', 'b_1', T0);
        const [leased] = await store.claimDue(T0, 1, A);
        await store.removeApp('app1', T0 + 1);
        // The try of the leased batch ends after the removal: no batch, no count comes back.
        await triedOnce(leased as StoredBatch, T0 + 2);
        expect(await store.get('b_1')).toBe(undefined);
        expect(await store.list('app1', 10)).toEqual([]);
        expect(await store.tryCounts('app1', T0, T0 + 3)).toEqual([]);
        expect(await store.stats(T0 + 3)).toEqual({ waiting: 0, oldestWaitingMs: 0, batches: {} });
        // An app made again with the key starts with an empty queue that works.
        await store.addEvent('app1', ev(2));
        expect((await formed('app1', 'b_2', T0 + 4)).body).toBe(bodyOf([ev(2)]));
        expect((await store.list('app1', 10)).map((b) => b.id)).toEqual(['b_2']);
      });
    });

    describe('stats', () => {
      it('counts waiting events, batches by state, and the age of the oldest event not delivered', async () => {
        expect(await store.stats(T0)).toEqual({ waiting: 0, oldestWaitingMs: 0, batches: {} });

        await store.addEvent('app1', ev(1, T0 - 500));
        await store.addEvent('app1', ev(2, T0 - 400));
        await formed('app1', 'b_1', T0 - 300);
        await store.addEvent('app2', ev(3, T0 - 200));
        await store.addEvent('app2', ev(4, T0 - 100));
        expect(await store.stats(T0)).toEqual({ waiting: 2, oldestWaitingMs: 300, batches: { pending: 1 } });

        // Once the batch is taken, the oldest event not delivered is the oldest waiting one.
        const [claimed] = await store.claimDue(T0, 1, A);
        await store.saveTry(
          { ...(claimed as StoredBatch), state: 'taken', attempts: 1, status: 200, nextAt: null, doneAt: T0 },
          A.holder,
        );
        expect(await store.stats(T0)).toEqual({ waiting: 2, oldestWaitingMs: 200, batches: { taken: 1 } });

        await formed('app2', 'b_2', T0 + 10, 1);
        const [retry] = await store.claimDue(T0 + 10, 1, A);
        await failed(retry as StoredBatch, A.holder, T0 + 11, T0 + 1000);
        expect(await peer.stats(T0 + 50)).toEqual({
          waiting: 1,
          oldestWaitingMs: 150,
          batches: { taken: 1, retrying: 1 },
        });
      });
    });

    describe('restart', () => {
      it('keeps waiting events, batches, their tries and their leases', async () => {
        await store.addEvent('app1', ev(1));
        await store.addEvent('app1', ev(2));
        await formed('app1', 'b_1', T0, 1);
        const [leased] = await store.claimDue(T0, 1, A);
        await failed(leased as StoredBatch, A.holder, T0 + 1, T0 + 2);
        await store.addEvent('app2', ev(3));
        await formed('app2', 'b_2', T0 + 3);
        // A node died mid-try: the lease is still running after the restart.
        expect((await store.claimDue(T0 + 3, 1, A)).map((b) => b.id)).toEqual(['b_1']);
        const before = await store.get('b_1');

        const again = harness.reopen ? await harness.reopen() : store;
        expect(await again.waiting()).toEqual(new Map([['app1', 1]]));
        expect(await again.get('b_1')).toEqual(before);
        expect(await again.claimDue(T0 + 4, 10, B)).toMatchObject([{ id: 'b_2' }]);
        expect(await again.claim('b_1', T0 + 4, B)).toBe('busy');
        expect((await again.claimDue(T0 + 3 + LEASE, 10, B)).map((b) => b.id)).toEqual(['b_1']);
        expect((await again.formBatch('app1', 'b_3', 100, T0 + 5))?.body).toBe(bodyOf([ev(2)]));
        expect((await again.list('app1', 10)).map((b) => b.id)).toEqual(['b_3', 'b_1']);
      });
    });
  });
}
