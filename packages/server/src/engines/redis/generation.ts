/**
 * The Redis generation: a random value that changes whenever Redis may have lost acknowledged
 * writes. Every room's meta records the generation it was written under; a room script that finds
 * another starts the room's epoch anew, so readers learn their ids may name lost events.
 *
 * The generation hash (`<prefix>gen`: gen, run) remembers the run_id of the Redis process it was
 * last confirmed on. A node checks it on every (re)connect:
 * - same run_id: the same Redis process has held the data all along; the generation stands;
 * - no hash: Redis lost everything (or it is new): a new generation;
 * - another run_id: Redis restarted (or a replica took over). Unless it loses no acknowledged write
 *   (append-only file fsynced on every write), what it loaded may be older than what was
 *   acknowledged: a new generation.
 * The check is one script, so nodes reconnecting at once agree on one generation.
 *
 * On a Redis Cluster the generation is per shard, and no key can pin it to a shard (keys move with
 * their slots). It is the list of current primaries, each as `<node id>:<incarnation>` (12 characters
 * of CLUSTER MYID, 8 of the process's run_id): `@ <entry> <entry> ... `. A room script finds its own
 * entry with CLUSTER MYID (room-lua.ts): a room written under an entry that is no longer in the list
 * was written on a primary that failed over (its replica may have missed writes) or restarted (it may
 * have loaded older data), so it starts a new epoch; a room moved by a reshard keeps its epoch (its
 * entry is still a live primary's). A restart with appendfsync always also counts as new on a cluster
 * (a spurious `truncated`, never a missed one). A script on a primary not in this node's list yet
 * answers UNCONFIRMED: the client confirms again and the caller answers unavailable meanwhile.
 */
import type { Redis } from 'ioredis';

const CHECK_LUA = `
local gen = redis.call('hget', KEYS[1], 'gen')
local run = redis.call('hget', KEYS[1], 'run')
if gen and run == ARGV[1] then return gen end
if not gen or ARGV[2] ~= '1' then gen = ARGV[3] end
redis.call('hset', KEYS[1], 'gen', gen, 'run', ARGV[1])
return gen`;

function infoField(info: string, name: string): string | undefined {
  const start = info.indexOf(`\n${name}:`);
  const at = start < 0 ? (info.startsWith(`${name}:`) ? 0 : -1) : start + 1;
  if (at < 0) return undefined;
  const end = info.indexOf('\r\n', at);
  return info.slice(at + name.length + 1, end < 0 ? undefined : end).trim();
}

/** True when this Redis keeps every acknowledged write across a restart: AOF with fsync on every write. */
async function losesNothing(redis: Redis): Promise<boolean> {
  const persistence = await redis.info('persistence');
  if (infoField(persistence, 'aof_enabled') !== '1') return false;
  try {
    const reply = (await redis.config('GET', 'appendfsync')) as unknown;
    return Array.isArray(reply) && reply[1] === 'always';
  } catch {
    // CONFIG may be disabled (managed Redis): not knowing counts as not durable.
    return false;
  }
}

/** Confirms or renews the generation on this connection; answers the generation to write under. */
export async function checkGeneration(redis: Redis, key: string, candidate: string): Promise<string> {
  const server = await redis.info('server');
  const runId = infoField(server, 'run_id');
  if (!runId) throw new Error('INFO server gave no run_id');
  const durable = await losesNothing(redis);
  const gen = await redis.eval(CHECK_LUA, 1, key, runId, durable ? '1' : '0', candidate);
  if (typeof gen !== 'string') throw new Error('the generation script answered no generation');
  return gen;
}

/** Each primary that answers as one: `<id>:<incarnation>`; a node that fails or is no primary is left out. */
export async function shardGenerations(primaries: readonly Redis[]): Promise<string[]> {
  const entries = await Promise.all(
    primaries.map(async (node) => {
      try {
        const [id, info, role] = await Promise.all([
          node.call('CLUSTER', 'MYID') as Promise<unknown>,
          node.info('server'),
          node.call('ROLE') as Promise<unknown>,
        ]);
        const run = infoField(info, 'run_id');
        if (typeof id !== 'string' || !run || !Array.isArray(role) || role[0] !== 'master') return undefined;
        return `${id.slice(0, 12)}:${run.slice(0, 8)}`;
      } catch {
        return undefined;
      }
    }),
  );
  return entries.filter((entry): entry is string => entry !== undefined).sort();
}
