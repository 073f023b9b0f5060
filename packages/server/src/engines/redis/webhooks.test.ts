import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { webhookContract } from '../contract/webhooks.contract.js';
import { RedisClient } from './client.js';
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
