import type { NodeClaim, NodeStore } from '../node-store.js';
import type { RedisClient, Script } from './client.js';

/**
 * Lua shared by the node scripts. Their keys (after the prefix) share the hash tag `{nodes}`, so
 * every script here works in one slot and touches no feature's keys:
 * - `{nodes}:lease` zset of the living nodes by the end of their lease;
 * - `{nodes}:lapsed` zset of lapsed nodes still to sweep, by the end of their sweeper's claim (0: unclaimed);
 * - `{nodes}:lapse` hash node -> the number of its lapse (while it is to sweep);
 * - `{nodes}:seq` the lapse counter: INCR at every lapse of any node.
 * KEYS: lease, lapsed, lapse, seq.
 */
const NODES_LUA = `
local LEASE, LAPSED, LAPSE, SEQ = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- The time leases and claims are compared in: the given one, or Redis's own when none is given
-- (one clock for every node, whatever theirs say).
local function lease_now(given)
  if given ~= '' then return tonumber(given) end
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

// ARGV: node, lease clock, lease ms. 1 when the node's lease was still there (it did not lapse).
const RENEW_LUA = `${NODES_LUA}
local held = redis.call('zscore', LEASE, ARGV[1])
redis.call('zadd', LEASE, lease_now(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
if held then return 1 end
return 0`;

// ARGV: lease clock, claim ms, caller's node. Moves the nodes whose lease ended to the lapsed, then
// claims one (unclaimed, or its sweeper's claim ended): answers { node, lapse }, or false. Never
// the caller's own node: it is alive, and renews once the store answers it again.
const CLAIM_LUA = `${NODES_LUA}
local now, claim_ms, self = lease_now(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local mine = redis.call('zscore', LEASE, self)
if mine then redis.call('zrem', LEASE, self) end
while true do
  local ended = redis.call('zrangebyscore', LEASE, '-inf', now, 'LIMIT', 0, 100)
  if #ended == 0 then break end
  for _, node in ipairs(ended) do
    redis.call('zrem', LEASE, node)
    redis.call('hset', LAPSE, node, redis.call('incr', SEQ))
    -- A node still being swept keeps its sweeper's claim; its new lapse is swept after (see SWEPT).
    redis.call('zadd', LAPSED, 'NX', 0, node)
  end
end
if mine then redis.call('zadd', LEASE, mine, self) end
for _, node in ipairs(redis.call('zrangebyscore', LAPSED, '-inf', now, 'LIMIT', 0, 2)) do
  if node ~= self then
    redis.call('zadd', LAPSED, now + claim_ms, node)
    return { node, redis.call('hget', LAPSE, node) }
  end
end
return false`;

// ARGV: node, lease clock, claim ms.
const EXTEND_LUA = `${NODES_LUA}
redis.call('zadd', LAPSED, 'XX', lease_now(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
return 1`;

// ARGV: node, lapse. Forgets the node, or leaves it claimable at once when it lapsed again meanwhile.
const SWEPT_LUA = `${NODES_LUA}
local node = ARGV[1]
if redis.call('hget', LAPSE, node) == ARGV[2] then
  redis.call('zrem', LAPSED, node)
  redis.call('hdel', LAPSE, node)
else
  redis.call('zadd', LAPSED, 'XX', 0, node)
end
return 1`;

export interface RedisNodeOptions {
  /**
   * The clock leases and claims are timed by. 'redis' (the default): Redis's own (TIME), one clock
   * for every node, so a node whose clock is off is neither swept while alive nor kept when dead.
   * 'caller': the times the calls give, for tests that move time by hand.
   */
  leaseClock?: 'redis' | 'caller';
}

/**
 * Node leases on Redis, shared by every node: each step is one script over the `{nodes}` keys, so a
 * lapsed node is claimed by one sweeper at a time however many sweep at once.
 */
export class RedisNodeStore implements NodeStore {
  readonly #leaseClock: 'redis' | 'caller';
  readonly #keys: string[];
  readonly #renew: Script;
  readonly #claim: Script;
  readonly #extend: Script;
  readonly #swept: Script;

  constructor(client: RedisClient, options: RedisNodeOptions = {}) {
    this.#leaseClock = options.leaseClock ?? 'redis';
    this.#keys = ['lease', 'lapsed', 'lapse', 'seq'].map((name) => client.key(`{nodes}:${name}`));
    this.#renew = client.script('rtNodeRenew', RENEW_LUA);
    this.#claim = client.script('rtNodeClaim', CLAIM_LUA);
    this.#extend = client.script('rtNodeExtend', EXTEND_LUA);
    this.#swept = client.script('rtNodeSwept', SWEPT_LUA);
  }

  async renew(node: string, nowMs: number, leaseMs: number): Promise<boolean> {
    return (await this.#renew(this.#keys, [node, this.#leaseNow(nowMs), leaseMs])) === 1;
  }

  async claim(nowMs: number, self: string, claimMs: number): Promise<NodeClaim | undefined> {
    const reply = await this.#claim(this.#keys, [this.#leaseNow(nowMs), claimMs, self]);
    if (!Array.isArray(reply)) return undefined;
    return { node: String(reply[0]), lapse: Number(reply[1]) };
  }

  async extend(claim: NodeClaim, nowMs: number, claimMs: number): Promise<void> {
    await this.#extend(this.#keys, [claim.node, this.#leaseNow(nowMs), claimMs]);
  }

  async swept(claim: NodeClaim): Promise<void> {
    await this.#swept(this.#keys, [claim.node, claim.lapse]);
  }

  /** The lease clock argument: '' has the script read Redis's clock. */
  #leaseNow(nowMs: number): number | '' {
    return this.#leaseClock === 'caller' ? nowMs : '';
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}
