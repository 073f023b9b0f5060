import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { brokerContract, waitFor } from '../contract/broker.contract.js';
import { compareEventIds, parseEventId } from '../event-id.js';
import { PublishIncomplete } from '../publish-incomplete.js';
import { StoreError } from '../store-error.js';
import { nodeTopic, type Outgoing, type Publication, roomTopic, userTopic } from '../types.js';
import { RedisBroker } from './broker.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';
import { roomKeys } from './keys.js';
import { RedisWebhookStore } from './webhooks.js';

const T0 = 1_700_000_000_000;

const idOf = (p: Publication): string | undefined => (p.kind === 'room' ? p.id : undefined);
const dataOf = (p: Publication): string => (p.kind === 'room' || p.kind === 'user' ? p.data : '');

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

/** Two nodes on one Redis: each its own client and broker. */
async function twoNodes(prefix: string) {
  const one = await RedisClient.open({ ...redisTarget(redis), prefix });
  const two = await RedisClient.open({ ...redisTarget(redis), prefix });
  const brokers = [new RedisBroker(one), new RedisBroker(two)] as const;
  const cleanup = async () => {
    for (const broker of brokers) await broker.close();
    await one.close();
    await two.close();
  };
  return { one, two, brokers, cleanup };
}

brokerContract('RedisBroker, two nodes', async () => {
  const { one, brokers, cleanup } = await twoNodes(uniquePrefix('broker'));
  return {
    broker: brokers[0],
    peer: brokers[1],
    history: new RedisHistoryStore(one),
    webhooks: new RedisWebhookStore(one),
    cleanup,
  };
});

describe('RedisBroker across nodes', () => {
  it('orders each room the same way at every subscriber of three nodes publishing batches at once', async () => {
    const prefix = uniquePrefix('three');
    const clients = await Promise.all([0, 1, 2].map(() => RedisClient.open({ ...redisTarget(redis), prefix })));
    const brokers = clients.map((client) => new RedisBroker(client));
    try {
      const rooms = ['r0', 'r1', 'r2'];
      const inboxes = new Map<string, Publication[][]>();
      for (const room of rooms) {
        const perNode: Publication[][] = [];
        for (const broker of brokers) {
          const got: Publication[] = [];
          await broker.subscribe(roomTopic('app1', room), (p) => got.push(p));
          perNode.push(got);
        }
        inboxes.set(room, perNode);
      }
      const rounds = 60;
      const calls: Array<Promise<(string | undefined)[]>> = [];
      for (let n = 0; n < rounds; n++) {
        for (const [b, broker] of brokers.entries()) {
          // A batch touching every room, some kept, with a clock that differs per node.
          const events: Outgoing[] = rooms.map((room, r) => ({
            kind: 'room',
            app: 'app1',
            room,
            event: 'e',
            data: JSON.stringify({ b, n, r }),
            ...((n + r) % 2 === 0 ? { keep: [1000, 1] as [number, number] } : {}),
          }));
          calls.push(broker.publish(events, T0 + n - b * 3));
        }
      }
      // Ids are per room: unique within each.
      const answered = (await Promise.all(calls)).flatMap((ids) => ids.map((id, r) => `${rooms[r]}/${id}`));
      expect(new Set(answered).size).toBe(answered.length);
      for (const room of rooms) {
        const perNode = inboxes.get(room) ?? [];
        for (const got of perNode) await waitFor(`${room} complete`, () => got.length === rounds * brokers.length);
        const order = perNode[0]?.map(idOf) ?? [];
        for (let i = 1; i < order.length; i++) {
          const before = parseEventId(order[i - 1] ?? '');
          const after = parseEventId(order[i] ?? '');
          expect(before && after && compareEventIds(before, after) < 0).toBe(true);
        }
        for (const got of perNode) expect(got.map(idOf)).toEqual(order);
        // Each node's batches arrive in the order it sent them.
        for (const b of [0, 1, 2]) {
          const mine = perNode[0]
            ?.map((p) => JSON.parse(dataOf(p)) as { b: number; n: number })
            .filter((d) => d.b === b);
          expect(mine?.map((d) => d.n)).toEqual(Array.from({ length: rounds }, (_, n) => n));
        }
      }
    } finally {
      for (const broker of brokers) await broker.close();
      for (const client of clients) await client.close();
    }
  });

  it('carries asks to a user and their answers to a node, every text field as set', async () => {
    const { brokers, cleanup } = await twoNodes(uniquePrefix('asks'));
    try {
      const [here, there] = brokers;
      const questions: Publication[] = [];
      const answers: Publication[] = [];
      await there.subscribe(userTopic('app1', 'ann'), (p) => questions.push(p));
      await here.subscribe(nodeTopic('node-a'), (p) => answers.push(p));
      const ask: Outgoing = {
        kind: 'ask',
        app: 'app1',
        user: 'ann',
        ask: 'q-1',
        replyTo: 'node-a',
        event: 'pick',
        data: '{"q":1}',
      };
      expect(await here.publish([ask], T0)).toEqual([undefined]);
      await waitFor('the ask', () => questions.length === 1);
      expect(questions).toEqual([ask]);
      const reply: Outgoing = {
        kind: 'node',
        node: 'node-a',
        app: 'app1',
        message: { type: 'ask.reply', ask: 'q-1', data: '"yes"' },
      };
      await there.publish([reply], T0);
      await waitFor('the answer', () => answers.length === 1);
      expect(answers).toEqual([reply]);
      expect(Object.keys(answers[0] ?? {}).sort()).toEqual(['app', 'kind', 'message', 'node']);
    } finally {
      await cleanup();
    }
  });

  it('shares one Redis subscription among the local subscriptions to a topic', async () => {
    const { one, brokers, cleanup } = await twoNodes(uniquePrefix('shared'));
    try {
      const channel = `${one.prefix}${roomTopic('app1', 'lobby')}`;
      // On a cluster the subscriptions are sharded: each primary counts those of its own slots.
      const count = async () => {
        const replies = await one.forEachPrimary(
          (r) => r.call('PUBSUB', one.cluster ? 'SHARDNUMSUB' : 'NUMSUB', channel) as Promise<unknown[]>,
        );
        return replies.reduce((sum: number, reply) => sum + Number(reply[1]), 0);
      };
      const stops = await Promise.all(
        [0, 1, 2, 3].map((i) => (brokers[i % 2] as RedisBroker).subscribe(roomTopic('app1', 'lobby'), () => {})),
      );
      // One per node, however many local subscriptions.
      expect(await count()).toBe(2);
      await stops[0]?.();
      await stops[1]?.();
      expect(await count()).toBe(2);
      await stops[2]?.();
      expect(await count()).toBe(1);
      await stops[3]?.();
      expect(await count()).toBe(0);
    } finally {
      await cleanup();
    }
  });

  it('publishes each room in a step of its own: a room whose step fails takes nothing, the others keep theirs', async () => {
    const { one, brokers, cleanup } = await twoNodes(uniquePrefix('partial'));
    try {
      const history = new RedisHistoryStore(one);
      // Room b's meta is not a hash: its script fails (as a shard without a primary would).
      await one.call((r) => r.set(roomKeys(one.prefix, 'app1', 'b')[0], 'x'));
      const events: Outgoing[] = [
        { kind: 'room', app: 'app1', room: 'a', event: 'e', data: '1', keep: [10, 1] },
        { kind: 'room', app: 'app1', room: 'b', event: 'e', data: '2', keep: [10, 1] },
        { kind: 'user', app: 'app1', user: 'ann', event: 'e', data: '3' },
        { kind: 'room', app: 'app1', room: 'a', event: 'e', data: '4', keep: [10, 1] },
      ];
      const failure = await brokers[0].publish(events, T0).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(PublishIncomplete);
      const { ids, failed } = failure as PublishIncomplete;
      expect(failed).toEqual([1]);
      expect(ids[1]).toBeUndefined();
      expect(ids[2]).toBeUndefined();
      expect((await history.last('app1', 'a', 10, T0)).events.map((e) => e.id)).toEqual([ids[0], ids[3]]);
      // No room took it: a plain StoreError, and the user's event was not sent either.
      const ann: Publication[] = [];
      await brokers[1].subscribe(userTopic('app1', 'ann'), (p) => ann.push(p));
      const none = await brokers[0]
        .publish([events[1] as Outgoing, { kind: 'user', app: 'app1', user: 'ann', event: 'e', data: '5' }], T0)
        .catch((error: unknown) => error);
      expect(none).toBeInstanceOf(StoreError);
      expect(none).not.toBeInstanceOf(PublishIncomplete);
      await brokers[0].publish([{ kind: 'user', app: 'app1', user: 'ann', event: 'e', data: '6' }], T0);
      await waitFor("ann's next event", () => ann.length > 0);
      expect(ann.map(dataOf)).toEqual(['6']);
    } finally {
      await cleanup();
    }
  });

  it("keeps one publisher's order in a room while a reported step waits for its index step", async () => {
    const { brokers, cleanup } = await twoNodes(uniquePrefix('turns'));
    try {
      const got: Publication[] = [];
      await brokers[1].subscribe(roomTopic('app1', 'lobby'), (p) => got.push(p));
      const report = { before: '{"id":"w","at":1,"event_id":"', after: '"}' };
      const calls = [0, 1, 2, 3, 4, 5].map((n) =>
        brokers[0].publish(
          [
            {
              kind: 'room',
              app: 'app1',
              room: 'lobby',
              event: `e${n}`,
              data: `${n}`,
              ...(n % 3 === 0 ? { report } : {}),
            },
          ],
          T0,
        ),
      );
      const ids = (await Promise.all(calls)).map(([id]) => id ?? '');
      for (let i = 1; i < ids.length; i++) {
        const before = parseEventId(ids[i - 1] ?? '');
        const after = parseEventId(ids[i] ?? '');
        expect(before && after && compareEventIds(before, after) < 0).toBe(true);
      }
      await waitFor('six events', () => got.length === 6);
      expect(got.map(dataOf)).toEqual(['0', '1', '2', '3', '4', '5']);
    } finally {
      await cleanup();
    }
  });
});
