/**
 * The Redis a test file's clients use: one redis-server of its own, or, when REALTIME_TEST_REDIS is
 * `cluster`, a real Redis Cluster (3 primaries, 1 replica each): the one the `redis-cluster` vitest
 * project started for the whole run (test/cluster-setup.ts), else one started for this file. Tests
 * that stop, restart or kill Redis use startRedis (one server) directly.
 */
import { inject } from 'vitest';
import { startRedisCluster } from './redis-cluster.js';
import { startRedis, type TestRedis } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Seed URLs of the Redis Cluster test/cluster-setup.ts started for the run. */
    redisCluster: string[] | undefined;
  }
}

const refuse = (what: string) => async (): Promise<never> => {
  throw new Error(`${what} is for one redis-server: this test runs on a shared Redis Cluster`);
};

export const onCluster = (): boolean => process.env.REALTIME_TEST_REDIS === 'cluster';

export async function startTestRedis(): Promise<TestRedis> {
  if (!onCluster()) return startRedis();
  const shared = inject('redisCluster');
  if (shared && shared.length > 0) {
    return {
      url: shared[0] as string,
      cluster: shared,
      port: Number(new URL(shared[0] as string).port),
      dir: '',
      stop: refuse('stop'),
      restart: refuse('restart'),
      kill: refuse('kill'),
      // Shared by every file of the run: closed by the setup once all are done.
      close: async () => {},
    };
  }
  const own = await startRedisCluster({ primaries: 3, replicas: 1 });
  return {
    url: own.urls[0] as string,
    cluster: own.urls,
    port: own.ports[0] as number,
    dir: own.dir,
    stop: refuse('stop'),
    restart: refuse('restart'),
    kill: refuse('kill'),
    close: () => own.close(),
  };
}
