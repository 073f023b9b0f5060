import type { LimitStore } from '../types.js';
import type { RedisClient, Script } from './client.js';

/**
 * Keys (after the client's prefix): `lim:t:<key>` a token bucket, hash of `t` tokens and `a` the
 * newest time given; `lim:s:<key>` held slots, zset of slot by when it ends. Both expire once idle
 * long enough that a missing key means the same (a full bucket, no slot held).
 */

// KEYS: the bucket. ARGV: now, perSecond, burst. The bucket as of now (a missing one is full), not
// stored, and `wait` for a token: 0, the ms until one is back, or -1 (never). Take and peek both start
// with it, so they agree exactly. Numbers are kept as %.17g text, which reads back exactly; answers
// are whole (Redis truncates floats).
const BUCKET_LUA = `
local now, rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('hmget', KEYS[1], 't', 'a')
local tokens, at = tonumber(state[1]), tonumber(state[2])
if tokens == nil or at == nil then
  tokens, at = burst, now
elseif now > at then
  tokens = math.min(burst, tokens + (now - at) / 1000 * rate)
  at = now
else
  tokens = math.min(burst, tokens)
end
local wait = 0
if tokens < 1 then
  if rate <= 0 then
    wait = -1
  else
    wait = math.max(1, math.ceil(at - now + (1 - tokens) * 1000 / rate))
  end
end`;

const TAKE_LUA = `${BUCKET_LUA}
if wait == 0 then tokens = tokens - 1 end
redis.call('hset', KEYS[1], 't', string.format('%.17g', tokens), 'a', string.format('%.17g', at))
if rate > 0 then
  -- Full again by then: a missing bucket starts full, the same thing.
  local idle = math.min(math.ceil((burst - tokens) * 1000 / rate + math.max(0, at - now)) + 1000, 2592000000)
  redis.call('pexpire', KEYS[1], string.format('%d', idle))
else
  redis.call('persist', KEYS[1])
end
return wait`;

// Read only: the wait take would answer, nothing written (nor the key's expiry touched).
const PEEK_LUA = `${BUCKET_LUA}
return wait`;

// KEYS: the slots. ARGV: now, slot, max, ttl. Answers 1 when the slot is held, 0 when full.
const ACQUIRE_LUA = `
local now, max, ttl = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not redis.call('zscore', KEYS[1], ARGV[2]) then
  redis.call('zremrangebyscore', KEYS[1], '-inf', now)
  if redis.call('zcard', KEYS[1]) >= max then return 0 end
end
redis.call('zadd', KEYS[1], string.format('%.17g', now + ttl), ARGV[2])
if redis.call('pttl', KEYS[1]) < ttl then redis.call('pexpire', KEYS[1], string.format('%d', math.max(ttl, 1))) end
return 1`;

/** Limits on Redis: one script call per take, peek or acquire, shared by every node. */
export class RedisLimitStore implements LimitStore {
  readonly #client: RedisClient;
  readonly #take: Script;
  readonly #peek: Script;
  readonly #acquire: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#take = client.script('rtLimitTake', TAKE_LUA);
    this.#peek = client.script('rtLimitPeek', PEEK_LUA);
    this.#acquire = client.script('rtLimitAcquire', ACQUIRE_LUA);
  }

  take(key: string, perSecond: number, burst: number, nowMs: number): Promise<number> {
    return this.#bucket(this.#take, key, perSecond, burst, nowMs);
  }

  peek(key: string, perSecond: number, burst: number, nowMs: number): Promise<number> {
    return this.#bucket(this.#peek, key, perSecond, burst, nowMs);
  }

  async #bucket(script: Script, key: string, perSecond: number, burst: number, nowMs: number): Promise<number> {
    const wait = Number(await script([this.#client.key(`lim:t:${key}`)], [nowMs, perSecond, burst]));
    return wait < 0 ? Number.POSITIVE_INFINITY : wait;
  }

  async acquire(key: string, slot: string, max: number, ttlMs: number, nowMs: number): Promise<boolean> {
    return (await this.#acquire([this.#client.key(`lim:s:${key}`)], [nowMs, slot, max, Math.ceil(ttlMs)])) === 1;
  }

  async release(key: string, slot: string): Promise<void> {
    await this.#client.call((redis) => redis.zrem(this.#client.key(`lim:s:${key}`), slot));
  }
}
