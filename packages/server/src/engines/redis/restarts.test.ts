/**
 * What a Redis restart does to rooms, for each kind of persistence: every room starts a new epoch
 * unless Redis keeps every acknowledged write (AOF fsynced on every write), and ids keep rising.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Persistence,
  startRedis,
  type TestRedis,
  uniquePrefix,
  untilItWorks,
} from '../../../test/redis-server.js';
import { compareEventIds, parseEventId } from '../event-id.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';

const T0 = 1_700_000_000_000;
const KEEP = [1000, 168] as const;

let redis: TestRedis | undefined;
const clients: RedisClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  await redis?.close();
  redis = undefined;
});

async function node(url: string, prefix: string): Promise<{ client: RedisClient; history: RedisHistoryStore }> {
  const client = await RedisClient.open({ url, prefix });
  clients.push(client);
  return { client, history: new RedisHistoryStore(client) };
}

function rising(before: string, after: string): boolean {
  const a = parseEventId(before);
  const b = parseEventId(after);
  return a !== undefined && b !== undefined && compareEventIds(a, b) < 0;
}

async function append(history: RedisHistoryStore, room: string, data: string, now = T0): Promise<string> {
  return history.append('a', room, { event: 'e', data }, [...KEEP], now);
}

describe('RedisHistoryStore across Redis restarts', () => {
  it('starts a new epoch after a restart from an RDB snapshot, keeping what the snapshot held', async () => {
    redis = await startRedis({ persistence: 'rdb' });
    const prefix = uniquePrefix('rdb');
    const { client, history } = await node(redis.url, prefix);
    const saved = [await append(history, 'lobby', '1'), await append(history, 'lobby', '2')];
    const epoch = (await history.last('a', 'lobby', 10, T0)).epoch;
    const quiet = (await history.last('a', 'quiet', 10, T0)).epoch;
    await client.call((r) => r.save());
    // Acknowledged, then lost: the snapshot was taken before it.
    const lost = await append(history, 'lobby', '3');

    await redis.restart({ keepData: true });
    await untilItWorks(() => client.check());

    const after = await history.last('a', 'lobby', 10, T0);
    expect(after.events.map((e) => e.id)).toEqual(saved);
    expect(after.epoch).not.toBe(epoch);
    const resumed = await history.since('a', 'lobby', lost, T0, undefined, epoch);
    expect(resumed).toMatchObject({ truncated: true, dropped: false, epoch: after.epoch });
    // Rooms without events too: anything may have been written to them after the snapshot.
    expect((await history.last('a', 'quiet', 10, T0)).epoch).not.toBe(quiet);
    // A new id is above the restored ones; the epoch stays once renewed.
    const next = await append(history, 'lobby', '4', T0 - 10);
    expect(rising(saved[1] ?? '', next)).toBe(true);
    expect((await history.last('a', 'lobby', 10, T0)).epoch).toBe(after.epoch);
  });

  it('gives every node the same new epoch after the restart', async () => {
    redis = await startRedis({ persistence: 'rdb' });
    const prefix = uniquePrefix('nodes');
    const one = await node(redis.url, prefix);
    const two = await node(redis.url, prefix);
    await append(one.history, 'lobby', '1');
    const before = (await two.history.last('a', 'lobby', 1, T0)).epoch;
    await one.client.call((r) => r.save());
    await redis.restart({ keepData: true });
    await untilItWorks(() => one.client.check());
    await untilItWorks(() => two.client.check());
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await append(i % 2 ? one.history : two.history, 'lobby', String(i)));
    const epochs = new Set([
      (await one.history.last('a', 'lobby', 1, T0)).epoch,
      (await two.history.last('a', 'lobby', 1, T0)).epoch,
    ]);
    expect(epochs.size).toBe(1);
    expect(epochs.has(before)).toBe(false);
    // Written under one epoch: a reader of it is not told of a gap.
    const [epoch] = [...epochs];
    expect(await two.history.since('a', 'lobby', ids[0] ?? '', T0, undefined, epoch)).toMatchObject({
      truncated: false,
    });
  });

  for (const [persistence, keeps] of [
    ['aof-always', true],
    ['aof-everysec', false],
    ['none', false],
  ] as Array<[Persistence, boolean]>) {
    it(`${keeps ? 'keeps' : 'renews'} the epoch across a restart with persistence ${persistence}`, async () => {
      redis = await startRedis({ persistence });
      const { client, history } = await node(redis.url, uniquePrefix(persistence));
      const id = await append(history, 'lobby', '1');
      const epoch = (await history.last('a', 'lobby', 1, T0)).epoch;
      await redis.restart({ keepData: true });
      await untilItWorks(() => client.check());
      const after = await history.since('a', 'lobby', '0-0', T0, undefined, epoch);
      if (keeps) {
        expect(after).toMatchObject({ epoch, truncated: false });
        expect(after.events.map((e) => e.id)).toEqual([id]);
      } else {
        expect(after.epoch).not.toBe(epoch);
        expect(after.truncated).toBe(true);
      }
    });
  }

  it('tells a reader without an epoch of a history lost in a restart: its id is from before the stream began', async () => {
    redis = await startRedis();
    const { client, history } = await node(redis.url, uniquePrefix('no-epoch'));
    const now = Date.now();
    const seen = await append(history, 'lobby', '1', now);
    await append(history, 'lobby', '2', now);
    const quiet = await append(history, 'quiet', 'q', now);
    const epoch = (await history.last('a', 'lobby', 1, now)).epoch;

    await redis.restart({ keepData: false });
    await untilItWorks(() => client.check());
    // Another node's clock a little behind: its ids still belong to the new stream.
    const fresh = [await append(history, 'lobby', '3', now + 100), await append(history, 'lobby', '4', now + 50)];
    const resumed = await history.since('a', 'lobby', seen, now + 100);
    expect(resumed).toMatchObject({ truncated: true, dropped: false });
    expect(resumed.epoch).not.toBe(epoch);
    expect(resumed.events.map((e) => e.data)).toEqual(['3', '4']);
    expect(await history.since('a', 'lobby', fresh[0] ?? '', now + 100)).toMatchObject({ truncated: false });
    // A room that got nothing since the restart says so too.
    expect(await history.since('a', 'quiet', quiet, now + 100)).toMatchObject({ events: [], truncated: true });
  });

  it('resumes a page that lost nothing after a restart that kept the data: only ids of the lost stream are truncated', async () => {
    redis = await startRedis({ persistence: 'rdb' });
    const { client, history } = await node(redis.url, uniquePrefix('kept'));
    const saved = [await append(history, 'lobby', '1'), await append(history, 'lobby', '2')];
    await append(history, 'quiet', 'q');
    const quietKept = (await history.last('a', 'quiet', 1, T0)).events[0]?.id ?? '';
    await client.call((r) => r.save());
    // Acknowledged, then lost: the snapshot was taken before it.
    const lost = await append(history, 'lobby', '3');

    await redis.restart({ keepData: true });
    await untilItWorks(() => client.check());
    // The new generation's stream begins after every kept id.
    const later = T0 + 60_000;
    // A page joining now: the quiet room's newest is a kept id from before the new generation.
    const joined = await history.last('a', 'quiet', 1, later);
    expect(joined.events.map((e) => e.id)).toEqual([quietKept]);
    for (const epoch of [joined.epoch, undefined]) {
      expect(await history.since('a', 'quiet', quietKept, later, undefined, epoch)).toMatchObject({
        events: [],
        truncated: false,
      });
    }
    const lobby = (await history.last('a', 'lobby', 10, later)).epoch;
    for (const epoch of [lobby, undefined]) {
      const resumed = await history.since('a', 'lobby', saved[0] ?? '', later, undefined, epoch);
      expect(resumed).toMatchObject({ truncated: false, dropped: false });
      expect(resumed.events.map((e) => e.id)).toEqual([saved[1]]);
    }
    // An id the snapshot lost names an event of the lost stream: truncated without the epoch too.
    expect(await history.since('a', 'lobby', lost, later)).toMatchObject({ truncated: true, dropped: false });
  });

  it('keeps the epoch when a node restarts but Redis does not', async () => {
    redis = await startRedis();
    const prefix = uniquePrefix('node-restart');
    const first = await node(redis.url, prefix);
    await append(first.history, 'lobby', '1');
    const epoch = (await first.history.last('a', 'lobby', 1, T0)).epoch;
    await first.client.close();
    const second = await node(redis.url, prefix);
    expect((await second.history.last('a', 'lobby', 1, T0)).epoch).toBe(epoch);
  });

  it('starts a new epoch when a room lost its meta (evicted), with ids above the old ones', async () => {
    redis = await startRedis();
    const prefix = uniquePrefix('evicted');
    const { client, history } = await node(redis.url, prefix);
    const old = await append(history, 'lobby', '1', T0 + 5000);
    const epoch = (await history.last('a', 'lobby', 1, T0)).epoch;
    await client.call((r) => r.del(`${prefix}{a:lobby}:m`));
    const page = await history.since('a', 'lobby', old, T0, undefined, epoch);
    expect(page).toMatchObject({ truncated: true, events: [] });
    expect(page.epoch).not.toBe(epoch);
    // What was left of the old stream went with it; new ids rise past the old stream's.
    expect((await history.last('a', 'lobby', 10, T0)).events).toEqual([]);
    expect(rising(old, await append(history, 'lobby', '2', T0))).toBe(true);
  });
});
