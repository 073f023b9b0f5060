/**
 * Redis going away, coming back, and running out of memory: every call answers (a StoreError, never
 * a hang), nothing half-stored, and subscriptions come back by themselves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis, uniquePrefix, untilItWorks } from '../../../test/redis-server.js';
import { waitFor } from '../contract/broker.contract.js';
import { StoreError } from '../store-error.js';
import { type Publication, roomTopic, userTopic } from '../types.js';
import { RedisAppStore } from './apps.js';
import { RedisBroker } from './broker.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';
import { RedisWebhookStore } from './webhooks.js';

const T0 = 1_700_000_000_000;

let redis: TestRedis | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await redis?.close();
  redis = undefined;
});

async function openNode(url: string, prefix: string) {
  const client = await RedisClient.open({ url, prefix });
  const broker = new RedisBroker(client);
  closers.push(
    () => client.close(),
    () => broker.close(),
  );
  return {
    client,
    broker,
    history: new RedisHistoryStore(client),
    apps: new RedisAppStore(client),
    webhooks: new RedisWebhookStore(client),
  };
}

async function expectStoreError(call: () => unknown, kind: 'unavailable' | 'full'): Promise<void> {
  let failure: unknown;
  try {
    await call();
  } catch (error) {
    failure = error;
  }
  expect(failure).toBeInstanceOf(StoreError);
  expect((failure as StoreError).kind).toBe(kind);
}

describe('Redis engine when Redis is away', () => {
  it('answers every call with unavailable while Redis is stopped, and works again once it is back', async () => {
    redis = await startRedis();
    const node = await openNode(redis.url, uniquePrefix('stopped'));
    const inbox: Publication[] = [];
    await node.broker.subscribe(roomTopic('a', 'lobby'), (p) => inbox.push(p));
    let resubscribed = 0;
    node.broker.onResubscribed(() => resubscribed++);
    await redis.stop();

    const keep = [10, 1] as [number, number];
    await expectStoreError(() => node.history.append('a', 'lobby', { event: 'e', data: '1' }, keep, T0), 'unavailable');
    await expectStoreError(() => node.history.nextId('a', 'lobby', T0), 'unavailable');
    await expectStoreError(() => node.history.since('a', 'lobby', '0-0', T0), 'unavailable');
    await expectStoreError(() => node.history.last('a', 'lobby', 1, T0), 'unavailable');
    await expectStoreError(() => node.history.prune(T0), 'unavailable');
    await expectStoreError(
      () => node.broker.publish([{ kind: 'room', app: 'a', room: 'lobby', event: 'e', data: '1' }], T0),
      'unavailable',
    );
    await expectStoreError(() => node.broker.subscribe(userTopic('a', 'ann'), () => {}), 'unavailable');
    await expectStoreError(() => node.apps.get('a'), 'unavailable');
    await expectStoreError(() => node.webhooks.addEvent('a', '{}'), 'unavailable');
    await expectStoreError(() => node.webhooks.stats(T0), 'unavailable');
    await expectStoreError(() => node.client.check(), 'unavailable');

    await redis.restart();
    await untilItWorks(() => node.client.check());
    // The subscription made before the outage is back without being asked, and the broker says when.
    await waitFor('the subscriber to be back', () => resubscribed === 1, 10_000);
    await node.broker.publish([{ kind: 'room', app: 'a', room: 'lobby', event: 'back', data: '2' }], T0);
    await waitFor('the publication after the outage', () => inbox.length > 0);
    expect(inbox).toEqual([expect.objectContaining({ event: 'back', data: '2' })]);
    expect(await node.history.append('a', 'lobby', { event: 'e', data: '3' }, keep, T0)).toMatch(/^\d+-\d+$/);
  });

  it('settles every call in flight when Redis dies under it', async () => {
    redis = await startRedis();
    const node = await openNode(redis.url, uniquePrefix('killed'));
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 300; i++) {
      calls.push(
        node.broker.publish(
          [{ kind: 'room', app: 'a', room: `r${i % 7}`, event: 'e', data: String(i), keep: [100, 1] }],
          T0,
        ),
      );
    }
    const killed = redis.kill();
    const settled = await Promise.allSettled(calls);
    await killed;
    for (const result of settled) {
      if (result.status === 'rejected') {
        expect(result.reason).toBeInstanceOf(StoreError);
        expect((result.reason as StoreError).kind).toBe('unavailable');
      }
    }
  });
});

describe('Redis engine when Redis is out of memory', () => {
  it('answers full and stores nothing of a refused publish', async () => {
    redis = await startRedis({ args: ['--maxmemory', '3mb', '--maxmemory-policy', 'noeviction'] });
    const node = await openNode(redis.url, uniquePrefix('full'));
    const inbox: Publication[] = [];
    await node.broker.subscribe(roomTopic('a', 'lobby'), (p) => inbox.push(p));
    const big = JSON.stringify('x'.repeat(100_000));
    const report = { before: '{"id":"ev","event_id":"', after: '","at":1}' };
    const accepted: string[] = [];
    let failure: unknown;
    for (let i = 0; i < 200 && failure === undefined; i++) {
      try {
        const [id] = await node.broker.publish(
          [{ kind: 'room', app: 'a', room: 'lobby', event: 'big', data: big, keep: [1000, 1], report }],
          T0,
        );
        accepted.push(id ?? '');
      } catch (error) {
        failure = error;
      }
    }
    expect(failure).toBeInstanceOf(StoreError);
    expect((failure as StoreError).kind).toBe('full');
    expect(accepted.length).toBeGreaterThan(0);
    // Nothing of the refused call: not in the history, not in the webhook queue, not delivered.
    const kept = await node.history.last('a', 'lobby', 1000, T0);
    expect(kept.events.map((e) => e.id)).toEqual(accepted);
    expect((await node.webhooks.waiting()).get('a')).toBe(accepted.length);
    // A presence change writes nothing, so it still goes out; everything before it arrived in order.
    await node.broker.publish(
      [{ kind: 'room', app: 'a', room: 'lobby', event: '$member.left', data: '{}', presence: true }],
      T0,
    );
    await waitFor('the presence change', () => inbox.some((p) => p.kind === 'room' && p.event === '$member.left'));
    expect(inbox.flatMap((p) => (p.kind === 'room' ? [p.id ?? p.event] : []))).toEqual([...accepted, '$member.left']);
    await expectStoreError(() => node.history.append('a', 'lobby', { event: 'e', data: big }, [10, 1], T0), 'full');
  });
});
