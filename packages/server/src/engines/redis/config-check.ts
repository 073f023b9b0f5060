import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisClient } from './client.js';

/** A setting of this Redis that the engine cannot run on: the one-line reason to refuse. */
export class RedisConfigRefused extends Error {}

/** Reads one CONFIG value; undefined when CONFIG is not allowed (managed Redis often disables it). */
async function configValue(redis: Redis, name: string): Promise<string | undefined> {
  try {
    const reply = (await redis.config('GET', name)) as unknown;
    return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * At start: refuses a Redis that would evict what must not go (history, waiting webhook events,
 * batches, apps, presence) when it fills up, and warns, saying what it costs, when a restart would
 * lose writes. Only `noeviction` keeps every key; a full Redis then refuses writes and the service
 * answers 503 `storage_full` for them, losing nothing already accepted.
 */
export async function checkRedisConfig(client: RedisClient, log: Logger): Promise<void> {
  // On a cluster every primary is checked; each warning is said once, however many primaries earn it.
  const said = new Set<string>();
  const once: Pick<Logger, 'warn'> = {
    warn: ((first: unknown, second?: unknown) => {
      const key = JSON.stringify([first, second]);
      if (said.has(key)) return;
      said.add(key);
      if (second === undefined) log.warn(first as string);
      else log.warn(first as object, second as string);
    }) as Logger['warn'],
  };
  // A refusal comes back as a value: forEachPrimary would make any error an unavailable store.
  const refusals = await client.forEachPrimary((redis) =>
    checkOne(redis, once).then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof RedisConfigRefused) return error;
        throw error;
      },
    ),
  );
  const refused = refusals.find((refusal) => refusal !== undefined);
  if (refused) throw refused;
}

async function checkOne(redis: Redis, log: Pick<Logger, 'warn'>): Promise<void> {
  const policy = await configValue(redis, 'maxmemory-policy');
  const maxmemory = await configValue(redis, 'maxmemory');
  if (policy === undefined) {
    log.warn(
      'could not read the Redis configuration (CONFIG GET is not allowed): make sure maxmemory-policy is noeviction',
    );
  } else if (policy !== 'noeviction') {
    if (maxmemory !== undefined && maxmemory !== '0') {
      throw new RedisConfigRefused(
        `Redis has maxmemory-policy ${policy}, which evicts keys when full (room history, webhook batches, apps): set it to noeviction`,
      );
    }
    log.warn(
      { policy },
      'Redis maxmemory-policy is not noeviction: harmless while maxmemory is 0 (no limit), but setting a limit later would evict room history and webhook batches',
    );
  }
  // On a cluster: with full coverage required (Redis's default), one failed primary stops every shard.
  if (
    (await configValue(redis, 'cluster-enabled')) === 'yes' &&
    (await configValue(redis, 'cluster-require-full-coverage')) === 'yes'
  ) {
    log.warn(
      "Redis Cluster has cluster-require-full-coverage yes: while one primary fails over, every shard refuses commands (the whole service answers 503); set it to no so only that primary's rooms and users wait",
    );
  }
  const appendonly = await configValue(redis, 'appendonly');
  const appendfsync = await configValue(redis, 'appendfsync');
  const save = await configValue(redis, 'save');
  if (appendonly === 'yes' && appendfsync === 'always') return;
  if (appendonly === 'yes') {
    log.warn(
      { appendfsync },
      'Redis persistence: a restart may lose up to a second of writes; rooms then start a new epoch (resuming pages get truncated) and events waiting for a webhook in that second are lost',
    );
  } else if (save !== undefined && save !== '') {
    log.warn(
      'Redis persistence is snapshots only: a restart loses the writes since the last snapshot; every room starts a new epoch (resuming pages get truncated), and webhook events and batches of that time are lost',
    );
  } else if (appendonly === 'no') {
    log.warn(
      'Redis persistence is off: a restart loses all room history (resuming pages get truncated), waiting webhook events and batches, and the apps; turn on appendonly (appendfsync always loses nothing)',
    );
  }
}
