import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import {
  cliLifecycle,
  emit,
  expectOneLine,
  freePort,
  logLines,
  run,
  SECRET_A,
  SECRET_B,
  serve,
  servers,
  start,
  tempDir,
  writeConfig,
} from './cli-harness.js';
import type { RawAnswer } from './helpers.js';

cliLifecycle();

describe('bad flags and config files', () => {
  const app = { key: 'good', secret: SECRET_A };
  const cases: [string, () => string[], string][] = [
    ['an unknown flag', () => ['--bogus'], '--bogus'],
    ['a flag without its value', () => ['--port'], '--port'],
    ['--port abc', () => ['--port', 'abc'], '--port'],
    ['--port 70000', () => ['--port', '70000'], '--port'],
    ['--port -1', () => ['--port', '-1'], '--port'],
    ['--redis not a redis:// URL', () => ['--redis', 'http://127.0.0.1:6379'], '--redis'],
    ['an unknown --log-level', () => ['--log-level', 'loud'], '--log-level'],
    ['a positional argument', () => ['extra'], '"extra"'],
    ['a missing config file', () => ['--config', join(tempDir(), 'nope.json')], 'nope.json'],
    ['a config file that is not JSON', () => ['--config', writeConfig('{ "apps": [')], 'not JSON'],
    ['a config file that is JSON but not an object', () => ['--config', writeConfig([app])], '"apps"'],
    ['an unknown top-level field', () => ['--config', writeConfig({ apps: [app], extra: 1 })], '"extra"'],
    ['an unknown app field', () => ['--config', writeConfig({ apps: [{ ...app, plan: 'pro' }] })], '"plan"'],
    [
      'a bad feature name',
      () => ['--config', writeConfig({ apps: [{ ...app, features: ['ask', 'teleport'] }] })],
      '"teleport"',
    ],
    ['features not an array', () => ['--config', writeConfig({ apps: [{ ...app, features: 'ask' }] })], 'features'],
    ['a short secret', () => ['--config', writeConfig({ apps: [{ key: 'good', secret: 'short' }] })], 'secret'],
    ['a missing secret', () => ['--config', writeConfig({ apps: [{ key: 'good' }] })], 'secret'],
    ['a bad key', () => ['--config', writeConfig({ apps: [{ key: 'has space', secret: SECRET_A }] })], 'key'],
    ['a key too long', () => ['--config', writeConfig({ apps: [{ key: 'k'.repeat(65), secret: SECRET_A }] })], 'key'],
    [
      'duplicate keys',
      () => ['--config', writeConfig({ apps: [app, { key: 'good', secret: SECRET_B }] })],
      'appears twice',
    ],
    ['apps not an array', () => ['--config', writeConfig({ apps: { good: app } })], '"apps" must be an array'],
    ['an app that is not an object', () => ['--config', writeConfig({ apps: ['good'] })], 'apps[0]'],
    [
      'a webhook that is not a URL',
      () => ['--config', writeConfig({ apps: [{ ...app, webhook: 'not a url' }] })],
      'not a URL',
    ],
  ];

  it.concurrent.for(cases)('%s: exit 2 and one line on stderr', async ([, args, includes], { expect }) => {
    const data = tempDir();
    const exit = await run(['serve', '--port', '0', '--data', data, ...args()]);
    expect(exit.code, exit.stderr).toBe(2);
    const lines = exit.stderr.replace(/\n$/, '').split('\n');
    expect(lines, exit.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^realtime: /);
    expect(lines[0]).toContain(includes);
    expect(exit.stderr).not.toMatch(/\bat .*:\d+:\d+/);
    expect(exit.stdout).toBe('');
    // Refused before anything was stored.
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);
  });

  it('refuses unknown commands and apps commands the same way', async () => {
    const data = tempDir();
    const results = await Promise.all([
      run(['launch']),
      run([]),
      run(['apps', '--data', data]),
      run(['apps', 'delete', 'x', '--data', data]),
      run(['apps', 'create', '--features', 'ask,teleport', '--data', data]),
      run(['apps', 'create', '--key', 'bad key', '--data', data]),
      run(['apps', 'create', '--webhook', 'http://example.com/hook', '--data', data]),
      run(['keygen', 'extra']),
    ]);
    const includes = ['"launch"', 'command', 'create', '"delete"', '"teleport"', '--key', 'https://', '"extra"'];
    for (const [i, exit] of results.entries()) expectOneLine(exit, 2, includes[i] as string);
  });
});
describe('settings from the environment', () => {
  it('serve takes every flag from a REALTIME_* variable', async () => {
    const data = tempDir();
    const port = await freePort();
    // The http:// webhook of the file is refused unless private webhooks are allowed.
    const config = writeConfig({ apps: [{ key: 'envapp', secret: SECRET_A, webhook: 'http://127.0.0.1:9/hook' }] });
    const child = start(['serve'], {
      REALTIME_HOST: '127.0.0.1',
      REALTIME_PORT: String(port),
      REALTIME_DATA: data,
      REALTIME_CONFIG: config,
      REALTIME_ALLOW_PRIVATE_WEBHOOKS: '1',
      REALTIME_LOG_LEVEL: 'warn',
    });
    servers.add(child.child);
    // At warn, the only line is the warning about private webhooks; "listening" (info) is left out.
    await child.waitFor((s) => s.includes('allow-private-webhooks'), 'the private webhooks warning');
    const url = `http://127.0.0.1:${port}`;
    let answer: RawAnswer | undefined;
    for (let i = 0; i < 100 && answer?.status !== 200; i++) {
      answer = await emit(url, 'envapp', SECRET_A).catch(() => undefined);
      if (answer?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(answer?.json).toEqual({ ok: true, ids: {} });
    expect(existsSync(join(data, 'realtime.db'))).toBe(true);
    child.child.kill('SIGTERM');
    const exit = await child.exited;
    expect(exit.code).toBe(0);
    const levels = logLines(exit.stdout).map((l) => l.level);
    expect(levels.length).toBeGreaterThan(0);
    expect(levels.every((level) => level >= 40)).toBe(true);
    expect(exit.stderr).toBe('');
  });

  it('a flag wins over its variable, whose value is then not even read', async () => {
    const [flagData, envData] = [tempDir(), tempDir()];
    const server = await serve(['--data', flagData, '--log-level', 'info', '--allow-private-webhooks'], {
      REALTIME_DATA: envData,
      REALTIME_PORT: 'not-a-port',
      REALTIME_LOG_LEVEL: 'loud',
      REALTIME_ALLOW_PRIVATE_WEBHOOKS: '0',
    });
    expect(existsSync(join(flagData, 'realtime.db'))).toBe(true);
    expect(existsSync(join(envData, 'realtime.db'))).toBe(false);
    const exit = await server.stop();
    expect(exit.code).toBe(0);
    expect(logLines(exit.stdout).some((l) => l.msg.includes('allow-private-webhooks'))).toBe(true);
  });

  const cases: [string, Record<string, string>][] = [
    ['REALTIME_PORT', { REALTIME_PORT: 'abc' }],
    ['REALTIME_PORT', { REALTIME_PORT: '70000' }],
    ['REALTIME_LOG_LEVEL', { REALTIME_LOG_LEVEL: 'loud' }],
    ['REALTIME_ALLOW_PRIVATE_WEBHOOKS', { REALTIME_ALLOW_PRIVATE_WEBHOOKS: 'maybe' }],
    ['REALTIME_REDIS', { REALTIME_REDIS: 'not a url' }],
    ['REALTIME_CONFIG', { REALTIME_CONFIG: '/nonexistent/realtime.json' }],
  ];
  it.concurrent.for(cases)('a bad %s: exit 2 and one line naming it', async ([name, env], { expect }) => {
    const data = tempDir();
    const exit = await run(['serve', '--data', data], env);
    expect(exit.code, exit.stderr).toBe(2);
    const lines = exit.stderr.replace(/\n$/, '').split('\n');
    expect(lines, exit.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^realtime: /);
    expect(lines[0]).toContain(name);
    expect(exit.stdout).toBe('');
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);
  });

  it('the apps commands read REALTIME_DATA', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--key', 'from-env', '--json'], { REALTIME_DATA: data });
    expect(created.code, created.stderr).toBe(0);
    const listed = await run(['apps', 'list', '--json', '--data', data]);
    expect((JSON.parse(listed.stdout) as App[]).map((a) => a.key)).toEqual(['from-env']);
  });
});
