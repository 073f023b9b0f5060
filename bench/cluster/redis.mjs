// The bench side of redis-keeper.mjs: start a redis-server, read its CPU time and memory.
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
    keeper: child,
  };
}
