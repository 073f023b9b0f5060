import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import { cliLifecycle, emit, expectOneLine, freePort, run, serve, tempDir } from './cli-harness.js';
import { startRedis, type TestRedis } from './redis-server.js';

cliLifecycle();

describe('on Redis: serve --redis and the apps commands', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.close());

  it('serve --redis keeps its apps in Redis: a development app shown once, the CLI reaches it, the next start keeps it', async () => {
    // A database of its own in the same Redis: the other tests' apps are elsewhere.
    const url = `${redis.url}/1`;
    const data = tempDir();
    const first = await serve(['--redis', url, '--data', data]);
    const out = await first.waitFor((s) => /REALTIME_SECRET=\S+ node \S+\n/.test(s), 'the command line', 'stderr');
    const key = /^ {2}key: +(\S+)$/m.exec(out)?.[1] as string;
    const secret = /^ {2}secret: +(\S+)$/m.exec(out)?.[1] as string;
    expect((await emit(first.url, key, secret)).json).toEqual({ ok: true, ids: {} });
    // The banner's command names the Redis it was given; nothing went to the data folder.
    const show = /^ +npx realtime (apps show \S+ --secret --redis \S+)$/m.exec(out)?.[1] ?? '';
    expect(show, out).toContain(url);
    const shown = await run(show.split(' '));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^secret: +${secret}$`, 'm'));
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);
    const stopped = await first.stop();
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(stopped.stdout).not.toContain(url);

    // From the variable this time: the app is still there, nothing new is created or printed.
    const second = await serve([], { REALTIME_REDIS: url });
    expect((await emit(second.url, key, secret)).json).toEqual({ ok: true, ids: {} });
    const secondExit = await second.stop();
    expect(secondExit.code, secondExit.stderr).toBe(0);
    expect(secondExit.stderr).toBe('');
  });

  it('serve refuses, in one line, a Redis that evicts keys when full', async () => {
    const evicting = await startRedis({ args: ['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'] });
    try {
      const exit = await run(['serve', '--port', '0', '--redis', evicting.url]);
      expect(exit.code, exit.stderr).toBe(1);
      expect(exit.stderr).toMatch(/^realtime: cannot run on this Redis: [^\n]*noeviction[^\n]*\n$/);
    } finally {
      await evicting.close();
    }
  });

  it('--redis or REALTIME_REDIS: create, list, show, rotate-secret and set-webhook work on the apps in Redis', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--key', 'shop', '--name', 'Shop', '--json', '--redis', redis.url]);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout) as App;
    expect(app).toMatchObject({ key: 'shop', name: 'Shop' });

    // The variable names the same Redis; nothing went to the data folder.
    const env = { REALTIME_REDIS: redis.url };
    const listed = await run(['apps', 'list', '--json', '--data', data], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as App[]).map((a) => a.key)).toEqual(['shop']);
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);

    const again = await run(['apps', 'create', '--key', 'shop', '--redis', redis.url]);
    expectOneLine(again, 2, 'exists already');

    const rotated = await run(['apps', 'rotate-secret', 'shop'], env);
    expect(rotated.code, rotated.stderr).toBe(0);
    const secret = /^secret: (\S+)$/m.exec(rotated.stdout)?.[1] ?? '';
    expect(secret).not.toBe(app.secret);
    const hook = await run(['apps', 'set-webhook', 'shop', 'https://example.com/hook'], env);
    expect(hook.code, hook.stderr).toBe(0);

    const shown = await run(['apps', 'show', 'shop', '--secret', '--json'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ key: 'shop', secret, webhook: 'https://example.com/hook' });
    expectOneLine(await run(['apps', 'show', 'nope'], env), 2, '"nope"');
  });

  it('a URL that is not redis:// is refused in one line; a Redis that does not answer is one line, exit 1', async () => {
    const [bad, badEnv, down] = await Promise.all([
      run(['apps', 'list', '--redis', 'http://127.0.0.1:1']),
      run(['apps', 'list'], { REALTIME_REDIS: 'not a url' }),
      run(['apps', 'list', '--redis', `redis://127.0.0.1:${await freePort()}`]),
    ]);
    expectOneLine(bad, 2, '--redis');
    expectOneLine(badEnv, 2, 'REALTIME_REDIS');
    expectOneLine(down, 1, 'cannot reach Redis');
  });
});
