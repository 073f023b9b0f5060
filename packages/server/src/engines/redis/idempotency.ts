import { createHash } from 'node:crypto';
import type { IdempotencyStore, Reservation } from '../idempotency-store.js';
import type { RedisClient, Script } from './client.js';

/**
 * Keys (after the client's prefix): `idem:<app>:<sha256 of the key>`, one hash per key (one slot on
 * a cluster, whatever characters the key holds): `f` the fingerprint, `o` the reserving request's
 * token, `a` the answer (absent while in flight), `u` when the record ends (ms, the caller's clock);
 * the key expires then too.
 */

// KEYS: the record. ARGV: fingerprint, owner, holdUntil, now.
const RESERVE_LUA = `
local kept = redis.call('hmget', KEYS[1], 'f', 'a', 'u')
if not kept[1] or tonumber(kept[3]) <= tonumber(ARGV[4]) then
  redis.call('del', KEYS[1])
  redis.call('hset', KEYS[1], 'f', ARGV[1], 'o', ARGV[2], 'u', ARGV[3])
  redis.call('pexpire', KEYS[1], string.format('%d', math.max(1, tonumber(ARGV[3]) - tonumber(ARGV[4]))))
  return {'reserved'}
end
if kept[1] ~= ARGV[1] then return {'conflict'} end
if not kept[2] then return {'in_flight'} end
return {'answered', kept[2]}`;

// KEYS: the record. ARGV: owner, answer, keepUntil, now.
const COMPLETE_LUA = `
local kept = redis.call('hmget', KEYS[1], 'o', 'a', 'u')
if kept[1] ~= ARGV[1] or kept[2] or tonumber(kept[3]) <= tonumber(ARGV[4]) then return 0 end
redis.call('hset', KEYS[1], 'a', ARGV[2], 'u', ARGV[3])
redis.call('pexpire', KEYS[1], string.format('%d', math.max(1, tonumber(ARGV[3]) - tonumber(ARGV[4]))))
return 1`;

// KEYS: the record. ARGV: owner.
const RELEASE_LUA = `
local kept = redis.call('hmget', KEYS[1], 'o', 'a')
if kept[1] == ARGV[1] and not kept[2] then redis.call('del', KEYS[1]) end
return 0`;

/** Idempotency keys on Redis, shared by every node: one script call per step. */
export class RedisIdempotencyStore implements IdempotencyStore {
  readonly #client: RedisClient;
  readonly #reserve: Script;
  readonly #complete: Script;
  readonly #release: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#reserve = client.script('rtIdemReserve', RESERVE_LUA);
    this.#complete = client.script('rtIdemComplete', COMPLETE_LUA);
    this.#release = client.script('rtIdemRelease', RELEASE_LUA);
  }

  #record(app: string, key: string): string {
    return this.#client.key(`idem:${app}:${createHash('sha256').update(key).digest('hex')}`);
  }

  async reserve(
    app: string,
    key: string,
    fingerprint: string,
    owner: string,
    holdUntilMs: number,
    nowMs: number,
  ): Promise<Reservation> {
    const found = (await this.#reserve(
      [this.#record(app, key)],
      [fingerprint, owner, holdUntilMs, nowMs],
    )) as unknown[];
    const [state, answer] = found;
    if (state === 'reserved' || state === 'in_flight' || state === 'conflict') return { state };
    if (state === 'answered' && typeof answer === 'string') return { state, answer };
    throw new Error(`the idempotency script answered ${String(state)}`);
  }

  async complete(
    app: string,
    key: string,
    owner: string,
    answer: string,
    keepUntilMs: number,
    nowMs: number,
  ): Promise<void> {
    await this.#complete([this.#record(app, key)], [owner, answer, keepUntilMs, nowMs]);
  }

  async release(app: string, key: string, owner: string): Promise<void> {
    await this.#release([this.#record(app, key)], [owner]);
  }
}
