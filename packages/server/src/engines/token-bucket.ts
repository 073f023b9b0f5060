/**
 * The tokens a bucket holds at `nowMs`: what it held at `atMs`, refilled at `perSecond` since, never
 * above `burst`. A clock behind `atMs` (stepped back, or another node's) refills nothing and takes
 * nothing away. Shared by the rate limits' memory store and the gateway's frame budget; the Redis
 * store does the same sum in Lua.
 */
export function refill(tokens: number, atMs: number, nowMs: number, perSecond: number, burst: number): number {
  if (nowMs <= atMs) return Math.min(burst, tokens);
  return Math.min(burst, tokens + ((nowMs - atMs) / 1000) * perSecond);
}
