// The bench side of redis-keeper.mjs and redis-cluster-keeper.mjs: start one redis-server or a Redis
// Cluster, read their CPU time and memory.
import { ask, start } from './processes.mjs';

/** A fresh redis-server on 127.0.0.1; `cpu()` is its CPU time so far in µs (INFO CPU). */
export async function startRedis() {
  const { child, first } = await start(new URL('./redis-keeper.mjs', import.meta.url));
  return {
    url: `redis://127.0.0.1:${first.port}`,
    pid: first.pid,
    cpu: async () => (await ask(child, 'cpu')).cpu,
    /** Bytes of memory Redis uses (INFO MEMORY used_memory). */
    memory: async () => (await ask(child, 'mem')).used,
    /** Per redis-server (one here): { port, pid, role, cpu, keys, scripts } (see resp.mjs statsOf). */
    stats: async () => (await ask(child, 'stats')).stats,
    keeper: child,
  };
}

/**
 * A fresh Redis Cluster on 127.0.0.1: `primaries` primaries with `replicas` replicas each. `urls` are
 * its seed URLs, `nodes` each node's { port, pid, role, slots }; `stats()` as for one redis-server,
 * one entry per node.
 */
export async function startRedisCluster({ primaries = 3, replicas = 0 } = {}) {
  const { child, first } = await start(new URL('./redis-cluster-keeper.mjs', import.meta.url), {
    env: { BENCH_REDIS_CLUSTER: JSON.stringify({ primaries, replicas }) },
  });
  return {
    urls: first.urls,
    nodes: first.nodes,
    stats: async () => (await ask(child, 'stats')).stats,
    keeper: child,
  };
}
