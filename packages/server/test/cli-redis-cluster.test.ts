import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import { cliLifecycle, emit, expectOneLine, logLines, run, serve } from './cli-harness.js';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.js';

cliLifecycle();

describe('on a Redis Cluster: serve --redis-cluster and the apps commands', () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ primaries: 3, replicas: 1 });
  }, 60_000);
  afterAll(() => cluster?.close());

  it('serve --redis-cluster keeps its apps on the cluster: a development app shown once, the CLI reaches it with the banner’s command', async () => {
    const seeds = cluster.urls.slice(0, 2).join(',');
    const first = await serve(['--redis-cluster', seeds]);
    const out = await first.waitFor((s) => /REALTIME_SECRET=\S+ node \S+\n/.test(s), 'the command line', 'stderr');
    const key = /^ {2}key: +(\S+)$/m.exec(out)?.[1] as string;
    const secret = /^ {2}secret: +(\S+)$/m.exec(out)?.[1] as string;
    expect((await emit(first.url, key, secret)).json).toEqual({ ok: true, ids: {} });
    const show = /^ +npx realtime (apps show \S+ --secret --redis-cluster \S+)$/m.exec(out)?.[1] ?? '';
    expect(show, out).toContain(seeds);
    const shown = await run(show.split(' '));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^secret: +${secret}$`, 'm'));
    const stopped = await first.stop();
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(logLines(stopped.stdout).some((line) => line.engine === 'redis-cluster')).toBe(true);
    // Seed URLs may hold a password: never logged.
    expect(stopped.stdout).not.toContain(seeds);
  });

  it('REALTIME_REDIS_CLUSTER: the apps commands work on the cluster', async () => {
    const env = { REALTIME_REDIS_CLUSTER: cluster.urls.join(',') };
    const created = await run(['apps', 'create', '--key', 'shop', '--name', 'Shop', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout) as App).toMatchObject({ key: 'shop', name: 'Shop' });
    const listed = await run(['apps', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as App[]).map((a) => a.key)).toContain('shop');
  });

  it('refuses in one line both --redis and --redis-cluster, an empty list, and a seed that is not redis://', async () => {
    const [both, empty, bad] = await Promise.all([
      run(['apps', 'list', '--redis', cluster.urls[0] as string, '--redis-cluster', cluster.urls[0] as string]),
      run(['apps', 'list', '--redis-cluster', ' , ']),
      run(['serve', '--port', '0'], { REALTIME_REDIS_CLUSTER: `${cluster.urls[0]},http://127.0.0.1:1` }),
    ]);
    expectOneLine(both, 2, '--redis-cluster');
    expectOneLine(empty, 2, '--redis-cluster');
    expectOneLine(bad, 2, 'REALTIME_REDIS_CLUSTER');
  });
});

describe('serve --redis-cluster with the whole cluster gone', () => {
  let cluster: TestRedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ primaries: 3, replicas: 0 });
  }, 60_000);
  afterAll(() => cluster?.close());

  it('stops on SIGTERM, draining, though no shard answers (a stop never waits on a shard forever)', async () => {
    const served = await serve(['--redis-cluster', cluster.urls.join(',')]);
    await served.waitFor((s) => /REALTIME_SECRET=\S+ node \S+\n/.test(s), 'the development app', 'stderr');
    await cluster.close();
    // Bounded: a stop that hangs fails here rather than at the test's timeout.
    const stopped = await Promise.race([
      served.stop(),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 15_000).unref()),
    ]);
    expect(stopped, 'the server still runs 15 s after SIGTERM').toBeDefined();
    expect(stopped?.code, stopped?.stderr).toBe(0);
    expect(logLines(stopped?.stdout ?? '').some((line) => line.msg === 'stopped')).toBe(true);
  });
});
