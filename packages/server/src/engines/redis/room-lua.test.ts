/**
 * The generation rule of open_room: a room's epoch stands while the generation it was written under
 * is still good, in both forms (one Redis: one token; a cluster: an entry per primary).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { RedisClient, type Script } from './client.js';
import { roomKeys } from './keys.js';
import { ROOM_LUA } from './room-lua.js';

const T0 = 1_700_000_000_000;
/** The shard's id on one Redis, which has no CLUSTER MYID: put in place of the call. */
const ONE_REDIS_ID = 'abcdef012345';

// ARGV: gens, epoch, now. Answers {epoch, g as written}.
const OPEN_LUA = `${ROOM_LUA}
local room = open_room(room_keys(1), ARGV[1], ARGV[2], tonumber(ARGV[3]))
room.dirty = true
save_room(room)
return {room.epoch, redis.call('hget', KEYS[1], 'g')}`;

let redis: TestRedis;
let client: RedisClient;
let open: Script;
let rooms = 0;

beforeAll(async () => {
  redis = await startTestRedis();
  client = await RedisClient.open({ ...redisTarget(redis), prefix: uniquePrefix('roomlua'), checkSlots: true });
  // One Redis answers no CLUSTER MYID: the shard's id is given instead; a cluster runs the real call.
  const lua = client.cluster ? OPEN_LUA : OPEN_LUA.replace("redis.call('cluster', 'myid')", `'${ONE_REDIS_ID}'`);
  open = client.script('rtTestOpenRoom', lua);
});

afterAll(async () => {
  await client?.close();
  await redis?.close();
});

/** A room of its own. */
function room(): (gens: string, epoch: string) => Promise<[string, string]> {
  const keys = roomKeys(client.prefix, 'a', `r${rooms++}`);
  return async (gens, epoch) => {
    const reply = (await open(keys, [gens, epoch, T0])) as [string, string];
    return [String(reply[0]), String(reply[1])];
  };
}

/** This shard's id: the one the script says it is missing from an empty list. */
async function shardId(of: (gens: string, epoch: string) => Promise<[string, string]>): Promise<string> {
  const refused = await of('@ ', 'e0').then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(refused).toBeInstanceOf(Error);
  const cause = (refused as Error).cause;
  const id = /UNCONFIRMED shard ([0-9a-z]+)/.exec(String(cause instanceof Error ? cause.message : cause))?.[1];
  expect(id).toBeDefined();
  return id as string;
}

describe('open_room on one token (one Redis)', () => {
  it('keeps the epoch under the same generation and starts anew under another', async () => {
    const of = room();
    expect(await of('g1', 'e1')).toEqual(['e1', 'g1']);
    expect(await of('g1', 'e2')).toEqual(['e1', 'g1']);
    expect(await of('g2', 'e3')).toEqual(['e3', 'g2']);
    expect(await of('g2', 'e4')).toEqual(['e3', 'g2']);
  });
});

describe('open_room on a list of shards (a cluster)', () => {
  it('refuses a list without this shard, writing nothing', async () => {
    const of = room();
    const me = await shardId(of);
    expect(me).toHaveLength(12);
    expect(await client.call((r) => r.exists(roomKeys(client.prefix, 'a', `r${rooms - 1}`)[0]))).toBe(0);
  });

  it("writes this shard's entry and keeps the epoch while the entry is listed", async () => {
    const of = room();
    const me = await shardId(of);
    expect(await of(`@ 000000000000:x ${me}:run1 `, 'e1')).toEqual(['e1', `${me}:run1`]);
    // Another primary joined or left the list: this shard's rooms keep their epochs.
    expect(await of(`@ ${me}:run1 ffffffffffff:y `, 'e2')).toEqual(['e1', `${me}:run1`]);
  });

  it("starts anew when this shard's entry changed (restart or failover): writes may be lost", async () => {
    const of = room();
    const me = await shardId(of);
    expect(await of(`@ ${me}:run1 `, 'e1')).toEqual(['e1', `${me}:run1`]);
    expect(await of(`@ ${me}:run2 `, 'e2')).toEqual(['e2', `${me}:run2`]);
  });

  it("keeps the epoch of a room written under another live primary's entry (a slot moved by a reshard)", async () => {
    const of = room();
    const me = await shardId(of);
    // Written under a single token first: not a live primary's entry, so a new epoch.
    expect(await of('old', 'e0')).toEqual(['e0', 'old']);
    expect(await of(`@ ${me}:run1 `, 'e1')).toEqual(['e1', `${me}:run1`]);
    await client.call((r) => r.hset(roomKeys(client.prefix, 'a', `r${rooms - 1}`)[0], 'g', '000000000000:x'));
    expect(await of(`@ 000000000000:x ${me}:run1 `, 'e2')).toEqual(['e1', `${me}:run1`]);
    // Its old primary is gone from the list: it may have lost writes the slot's new owner never had.
    await client.call((r) => r.hset(roomKeys(client.prefix, 'a', `r${rooms - 1}`)[0], 'g', '000000000000:x'));
    expect(await of(`@ ${me}:run1 `, 'e3')).toEqual(['e3', `${me}:run1`]);
  });
});
