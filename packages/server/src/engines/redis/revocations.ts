import type { AppRevocations, RevocationStore, RevokeOutcome } from '../revocation-store.js';
import type { RedisClient, Script } from './client.js';

/**
 * Keys (after the client's prefix): `rv:{<app>}`, a hash per app (one slot): field `a` the app-wide
 * revocation, `u:<user>` one per user, each `<before>:<until>` in ms. The key expires with its last
 * revocation.
 */

// KEYS: the app's hash. ARGV: field, before, until, maxUsers, now. Drops ended fields, refuses a new
// user field past maxUsers ('full'), keeps the later before and the later until.
const REVOKE_LUA = `
local field, before, untilMs, maxUsers, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local all = redis.call('hgetall', KEYS[1])
local users = 0
local latest = untilMs
for i = 1, #all, 2 do
  local sep = string.find(all[i + 1], ':', 1, true)
  local ends = tonumber(string.sub(all[i + 1], sep + 1))
  if ends <= now then
    redis.call('hdel', KEYS[1], all[i])
  else
    if string.sub(all[i], 1, 2) == 'u:' then users = users + 1 end
    if ends > latest then latest = ends end
  end
end
local stored = redis.call('hget', KEYS[1], field)
if stored then
  local sep = string.find(stored, ':', 1, true)
  local b, e = tonumber(string.sub(stored, 1, sep - 1)), tonumber(string.sub(stored, sep + 1))
  if e > now then
    if b > before then before = b end
    if e > untilMs then untilMs = e end
  end
elseif field ~= 'a' and users >= maxUsers then
  return 'full'
end
redis.call('hset', KEYS[1], field, string.format('%d:%d', before, untilMs))
redis.call('pexpire', KEYS[1], string.format('%d', math.max(1, latest - now)))
return 'stored'`;

/** Revocations on Redis, shared by every node: one hash per app, one script call per revoke. */
export class RedisRevocationStore implements RevocationStore {
  readonly #client: RedisClient;
  readonly #revoke: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#revoke = client.script('rtRevokeTokens', REVOKE_LUA);
  }

  #key(app: string): string {
    return this.#client.key(`rv:{${app}}`);
  }

  async revoke(
    app: string,
    user: string | undefined,
    beforeMs: number,
    keepUntilMs: number,
    maxUsers: number,
    nowMs: number,
  ): Promise<RevokeOutcome> {
    const field = user === undefined ? 'a' : `u:${user}`;
    const outcome = await this.#revoke([this.#key(app)], [field, beforeMs, keepUntilMs, maxUsers, nowMs]);
    return outcome === 'full' ? 'full' : 'stored';
  }

  async read(app: string, nowMs: number): Promise<AppRevocations> {
    const fields = await this.#client.call((redis) => redis.hgetall(this.#key(app)));
    let whole: number | undefined;
    const users = new Map<string, number>();
    for (const [field, value] of Object.entries(fields)) {
      const sep = value.indexOf(':');
      const before = Number(value.slice(0, sep));
      if (!(Number(value.slice(sep + 1)) > nowMs)) continue;
      if (field === 'a') whole = before;
      else if (field.startsWith('u:')) users.set(field.slice(2), before);
    }
    return { app: whole, users };
  }
}
