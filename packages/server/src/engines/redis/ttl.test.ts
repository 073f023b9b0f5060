/** Key lifetimes: a room's events go with their newest event; its meta a day later. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { RedisClient } from './client.js';
import { RedisHistoryStore } from './history.js';
import { META_IDLE_MS } from './room-lua.js';

const T0 = 1_700_000_000_000;
const HOUR = 3_600_000;

let redis: TestRedis;
let client: RedisClient;
let prefix: string;

beforeAll(async () => {
  redis = await startTestRedis();
  prefix = uniquePrefix('ttl');
  client = await RedisClient.open({ ...redisTarget(redis), prefix });
});

afterAll(async () => {
  await client?.close();
  await redis?.close();
});

/** The remaining life of each key of the room, in ms (-2: no such key). */
async function lives(room: string): Promise<Record<'m' | 's' | 'i' | 'x', number>> {
  const base = `${prefix}{a:${room}}`;
  const [m, s, i, x] = await client.call((r) =>
    Promise.all(['m', 's', 'i', 'x'].map((part) => r.pttl(`${base}:${part}`))),
  );
  return { m: m ?? -2, s: s ?? -2, i: i ?? -2, x: x ?? -2 };
}

/** Within a minute (the time the calls take, on a busy machine) below `ms`. */
const about = (ms: number) => expect.toSatisfy((t: number) => t <= ms && t > ms - 60_000);

it('gives the events the life of the longest-lived, and the meta a day more', async () => {
  const history = new RedisHistoryStore(client);
  await history.append('a', 'lobby', { event: 'e', data: '1' }, [10, 2], T0);
  expect(await lives('lobby')).toEqual({
    m: about(2 * HOUR + META_IDLE_MS),
    s: about(2 * HOUR),
    i: about(2 * HOUR),
    x: about(2 * HOUR),
  });
  // A shorter rule does not cut the life of what is kept; a longer one extends it.
  await history.append('a', 'lobby', { event: 'e', data: '2' }, [10, 1], T0);
  expect((await lives('lobby')).s).toEqual(about(2 * HOUR));
  await history.append('a', 'lobby', { event: 'e', data: '3' }, [10, 5], T0);
  expect(await lives('lobby')).toEqual({
    m: about(5 * HOUR + META_IDLE_MS),
    s: about(5 * HOUR),
    i: about(5 * HOUR),
    x: about(5 * HOUR),
  });
});

it('keeps the meta of a room without events for a day after its last use', async () => {
  const history = new RedisHistoryStore(client);
  await history.nextId('a', 'quiet', T0);
  expect(await lives('quiet')).toEqual({ m: about(META_IDLE_MS), s: -2, i: -2, x: -2 });
  const read = await history.last('a', 'never', 10, T0);
  expect(read.epoch).not.toBe('');
  expect(await lives('never')).toEqual({ m: about(META_IDLE_MS), s: -2, i: -2, x: -2 });
});
