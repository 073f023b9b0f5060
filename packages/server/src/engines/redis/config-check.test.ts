import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTarget, startRedis, type TestRedis } from '../../../test/redis-server.js';
import { RedisClient } from './client.js';
import { checkRedisConfig, RedisConfigRefused } from './config-check.js';

/** A logger that keeps its warnings, to read what the check said. */
function recordingLog() {
  const warnings: string[] = [];
  const log = pino(
    { level: 'warn' },
    { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
  );
  return { log, warnings };
}

describe('the Redis configuration check at start', () => {
  let redis: TestRedis;
  let client: RedisClient;
  const set = (name: string, value: string) => client.redis.config('SET', name, value);

  beforeAll(async () => {
    redis = await startRedis();
    client = await RedisClient.open({ ...redisTarget(redis) });
  });
  afterAll(async () => {
    await client.close();
    await redis.close();
  });

  it('refuses a Redis that evicts keys when full, naming the setting to change', async () => {
    await set('maxmemory', '100mb');
    for (const policy of ['allkeys-lru', 'volatile-lru', 'allkeys-random', 'volatile-ttl']) {
      await set('maxmemory-policy', policy);
      const { log } = recordingLog();
      const refused = checkRedisConfig(client, log);
      await expect(refused).rejects.toBeInstanceOf(RedisConfigRefused);
      await expect(refused).rejects.toThrow(`maxmemory-policy ${policy}`);
      await expect(refused).rejects.toThrow('noeviction');
    }
  });

  it('takes noeviction; warns about an evicting policy only while there is no memory limit', async () => {
    await set('maxmemory', '100mb');
    await set('maxmemory-policy', 'noeviction');
    const quiet = recordingLog();
    await checkRedisConfig(client, quiet.log);
    expect(quiet.warnings.some((w) => w.includes('maxmemory-policy'))).toBe(false);

    await set('maxmemory', '0');
    await set('maxmemory-policy', 'allkeys-lru');
    const warned = recordingLog();
    await checkRedisConfig(client, warned.log);
    expect(warned.warnings.some((w) => w.includes('maxmemory-policy is not noeviction'))).toBe(true);
    await set('maxmemory-policy', 'noeviction');
  });

  it('warns, saying what a restart costs, for each kind of persistence; nothing for AOF fsynced always', async () => {
    const said = async () => {
      const { log, warnings } = recordingLog();
      await checkRedisConfig(client, log);
      return warnings.join(' | ');
    };
    await set('appendonly', 'no');
    await set('save', '');
    expect(await said()).toContain('persistence is off');
    await set('save', '3600 1');
    expect(await said()).toContain('snapshots only');
    await set('save', '');
    await set('appendonly', 'yes');
    await set('appendfsync', 'everysec');
    expect(await said()).toContain('up to a second of writes');
    await set('appendfsync', 'always');
    expect(await said()).toBe('');
    await set('appendonly', 'no');
  });
});
