import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { webhookContract } from '../contract/webhooks.contract.js';
import { StoreError } from '../store-error.js';
import { RedisClient, type Script } from './client.js';
import { REPORT_INDEX_KEYS, reportAppsKey, reportIndexOf, reportKey, reportRoomsKey, waitingKey } from './keys.js';
import { RedisPublisher } from './publisher.js';
import { RedisWebhookStore } from './webhooks.js';

const T0 = 1_700_000_000_000;

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

const open = (prefix: string) => RedisClient.open({ ...redisTarget(redis), prefix, checkSlots: true });

webhookContract('RedisWebhookStore', async () => {
  const prefix = uniquePrefix('webhooks');
  const clients: RedisClient[] = [await open(prefix), await open(prefix)];
  return {
    store: new RedisWebhookStore(clients[0] as RedisClient),
    // Another node on the same Redis.
    peer: new RedisWebhookStore(clients[1] as RedisClient),
    reopen: async () => {
      await clients[0]?.close();
      const client = await open(prefix);
      clients.push(client);
      return new RedisWebhookStore(client);
    },
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});

describe('RedisWebhookStore: lists in their own slots, the index and the repair walk', () => {
  /** A store and a publisher on a prefix of their own; the store's clock at `now.at`. */
  async function scene() {
    const client = await open(uniquePrefix('whrepair'));
    const now = { at: T0 };
    const store = new RedisWebhookStore(client, { now: () => now.at });
    const publisher = new RedisPublisher(client);
    const report = (n: number) => ({
      before: `{"id":"ev_${n}","at":${T0 + n},"type":"emit","event_id":"`,
      after: '"}',
    });
    const send = (room: string, n: number) =>
      publisher.publish([{ kind: 'room', app: 'app1', room, event: 'said', data: `${n}`, report: report(n) }], T0 + n);
    /** Forgets every index entry: what a node that died between a publish's steps leaves. */
    const loseIndex = async () => {
      for (let k = 0; k < REPORT_INDEX_KEYS; k++) {
        await client.call((r) => r.del(reportAppsKey(client.prefix, k)));
        await client.call((r) => r.del(reportRoomsKey(client.prefix, k, 'app1')));
      }
    };
    return { client, store, publisher, send, loseIndex, now };
  }

  it("keeps a room's reports in the room's slot, indexed by the room's hash, and forms one batch of the app's rooms by time", async () => {
    const { client, store, send } = await scene();
    try {
      const [a1] = await send('a', 1);
      const [b2] = await send('b', 2);
      const [a3] = await send('a', 3);
      const list = reportKey(client.prefix, 'app1', 'a');
      expect(await client.call((r) => r.llen(list))).toBe(2);
      const k = reportIndexOf('app1', 'a');
      expect(await client.call((r) => r.smembers(reportRoomsKey(client.prefix, k, 'app1')))).toContain('a');
      expect(await store.waiting()).toEqual(new Map([['app1', 3]]));
      const batch = await store.formBatch('app1', 'b_1', 100, T0 + 10);
      expect(
        (JSON.parse(batch?.body ?? '{}') as { events: { event_id: string }[] }).events.map((e) => e.event_id),
      ).toEqual([a1, b2, a3]);
      // Emptied rooms leave the index; their lists and claims are gone.
      expect(await client.call((r) => r.smembers(reportRoomsKey(client.prefix, k, 'app1')))).toEqual([]);
      expect(await client.call((r) => r.exists(list, `${list}:b`))).toBe(0);
      expect(await store.waiting()).toEqual(new Map());
      // A report after puts the room back.
      await send('a', 4);
      expect(await store.waiting()).toEqual(new Map([['app1', 1]]));
    } finally {
      await client.close();
    }
  });

  it('finds reports whose index entry was lost (a node died between the steps) by the repair walk', async () => {
    const { client, store, send, loseIndex } = await scene();
    try {
      await send('a', 1);
      await store.addEvent('app1', `{"id":"ev_x","at":${T0},"type":"user.online","user":"ann"}`);
      await loseIndex();
      expect(await store.waiting()).toEqual(new Map());
      await store.prune(T0);
      expect(await store.waiting()).toEqual(new Map([['app1', 2]]));
      expect((await store.formBatch('app1', 'b_1', 100, T0))?.events).toBe(2);
    } finally {
      await client.close();
    }
  });

  it('stores as a batch the events a node took and died with, once, after a minute, unless their batch was stored', async () => {
    const { client, store, now } = await scene();
    try {
      const own = waitingKey(client.prefix, 'app1');
      const room = reportKey(client.prefix, 'app1', 'a');
      const ev = (n: number) => `{"id":"ev_${n}","at":${T0},"type":"user.online","user":"u${n}"}`;
      // b_1: taken from both lists, the node died before storing it; b_2: stored, claims not dropped.
      await client.call((r) => r.hset(`${own}:b`, 'b_1', `${T0}\n${ev(1)}\n${ev(2)}`, 'b_2', `${T0}\n${ev(3)}`));
      await client.call((r) => r.hset(`${room}:b`, 'b_1', `${T0}\n${ev(4)}`));
      await store.addBatch('app1', 'b_2', [ev(3)], T0, { holder: 'n', ms: 1000 });
      // Not yet stale: a node may be storing it now.
      now.at = T0 + 30_000;
      await store.repair();
      expect(await store.list('app1', 10)).toHaveLength(1);
      now.at = T0 + 61_000;
      await store.repair();
      await store.repair();
      const batches = await store.list('app1', 10);
      const events = batches.flatMap((b) =>
        (JSON.parse(b.body) as { events: { id: string }[] }).events.map((e) => e.id),
      );
      expect(events.sort()).toEqual(['ev_1', 'ev_2', 'ev_3', 'ev_4']);
      expect(batches).toHaveLength(3);
      expect(await client.call((r) => r.exists(`${own}:b`))).toBe(0);
      expect(await client.call((r) => r.exists(`${room}:b`))).toBe(0);
    } finally {
      await client.close();
    }
  });
});

describe('RedisWebhookStore: a step of forming a batch fails', () => {
  /**
   * Makes the named script fail for calls whose first key passes `which`: before it runs, or after
   * (it ran; its answer was lost, as when a primary dies before replying). Set before the store exists.
   */
  function failScript(client: RedisClient, name: string, when: 'before' | 'after', which: (key: string) => boolean) {
    const original = client.script.bind(client);
    const failing = { left: 1 };
    client.script = (n: string, lua: string): Script => {
      const run = original(n, lua);
      if (n !== name) return run;
      return async (keys, args) => {
        if (failing.left > 0 && which(keys[0] ?? '')) {
          failing.left -= 1;
          if (when === 'after') await run(keys, args);
          throw new StoreError('unavailable', { message: `${name} failed (test)` });
        }
        return await run(keys, args);
      };
    };
    return failing;
  }

  async function scene(fail: { script: string; when: 'before' | 'after'; which?: (key: string) => boolean }) {
    const client = await open(uniquePrefix('whfail'));
    const failing = failScript(client, fail.script, fail.when, fail.which ?? (() => true));
    const store = new RedisWebhookStore(client);
    const publisher = new RedisPublisher(client);
    const send = async (room: string, n: number) => {
      const report = { before: `{"id":"ev_${n}","at":${T0 + n},"type":"emit","event_id":"`, after: '"}' };
      await publisher.publish([{ kind: 'room', app: 'app1', room, event: 'said', data: `${n}`, report }], T0 + n);
    };
    /** The ids of every event in the app's batches, as many times as batches hold them. */
    const batched = async () =>
      (await store.list('app1', 100)).flatMap((b) =>
        (JSON.parse(b.body) as { events: { id: string }[] }).events.map((e) => e.id),
      );
    // One key a command: the rooms' keys are in different slots on a cluster.
    const claimsLeft = async () =>
      (await client.call((r) => r.exists(`${reportKey(client.prefix, 'app1', 'a')}:b`))) +
      (await client.call((r) => r.exists(`${reportKey(client.prefix, 'app1', 'b')}:b`)));
    return { client, store, send, batched, claimsLeft, failing };
  }

  /** Waits (bounded) until `test` answers true. */
  async function until(test: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!(await test())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('stores the events it took within a second once the batch store fails, not at the repair walk a minute on', async () => {
    const { client, store, send, batched, claimsLeft, failing } = await scene({
      script: 'rtWebhookAdd',
      when: 'before',
    });
    try {
      await send('a', 1);
      await send('b', 2);
      await expect(store.formBatch('app1', 'b_1', 100, T0 + 10)).rejects.toThrow('failed (test)');
      expect(failing.left).toBe(0);
      await until(async () => (await batched()).length === 2, 'the claimed events in a batch');
      await until(async () => (await claimsLeft()) === 0, 'the claims dropped');
      expect((await batched()).sort()).toEqual(['ev_1', 'ev_2']);
      expect(await store.waiting()).toEqual(new Map());
    } finally {
      store.close();
      await client.close();
    }
  });

  it('stores no second copy when the batch store ran and only its answer was lost', async () => {
    const { client, store, send, batched, claimsLeft } = await scene({ script: 'rtWebhookAdd', when: 'after' });
    try {
      await send('a', 1);
      await send('b', 2);
      await expect(store.formBatch('app1', 'b_1', 100, T0 + 10)).rejects.toThrow('failed (test)');
      await until(async () => (await claimsLeft()) === 0, 'the claims settled');
      expect(await batched()).toEqual(['ev_1', 'ev_2']);
      expect(await store.list('app1', 100)).toHaveLength(1);
    } finally {
      store.close();
      await client.close();
    }
  });

  it("batches a room's events whose take ran but answered nothing, though the batch stored the other rooms'", async () => {
    const { client, store, send, batched, claimsLeft } = await scene({
      script: 'rtWebhookTake',
      when: 'after',
      which: (key) => key === reportKey(client.prefix, 'app1', 'b'),
    });
    try {
      await send('a', 1);
      await send('b', 2);
      await send('a', 3);
      const batch = await store.formBatch('app1', 'b_1', 100, T0 + 10);
      expect(batch?.events).toBe(2);
      await until(async () => (await batched()).length === 3, "room b's event in a batch of its own");
      await until(async () => (await claimsLeft()) === 0, 'the claims dropped');
      expect((await batched()).sort()).toEqual(['ev_1', 'ev_2', 'ev_3']);
      expect(await store.list('app1', 100)).toHaveLength(2);
    } finally {
      store.close();
      await client.close();
    }
  });
});
