import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FEATURES } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  client,
  cliLifecycle,
  emit,
  expectOneLine,
  logLines,
  ROOT,
  run,
  SECRET_A,
  SECRET_B,
  serve,
  tempDir,
  writeConfig,
} from './cli-harness.js';
import { API, send } from './helpers.js';

cliLifecycle();

describe('serve without any app', () => {
  it('prints a development app and a command line on stderr, answers a signed emit, stops on SIGTERM, keeps the app', async () => {
    const data = tempDir();
    const first = await serve(['--data', data]);
    const out = await first.waitFor((s) => /REALTIME_SECRET=\S+ node \S+\n/.test(s), 'the command line', 'stderr');
    const key = /^ {2}key: +(\S+)$/m.exec(out)?.[1] as string;
    const secret = /^ {2}secret: +(\S+)$/m.exec(out)?.[1] as string;
    expect(key).toMatch(/^[A-Za-z0-9._-]{1,64}$/);
    expect(secret.length).toBeGreaterThanOrEqual(32);

    // The command line names this server and these credentials, and a script that exists.
    const command = /^ +REALTIME_URL=(\S+) REALTIME_KEY=(\S+) REALTIME_SECRET=(\S+) node (\S+)$/m.exec(out);
    expect(command, out).not.toBeNull();
    const [, url, commandKey, commandSecret, script] = command as RegExpExecArray;
    expect(url).toBe(first.url);
    expect(commandKey).toBe(key);
    expect(commandSecret).toBe(secret);
    expect(existsSync(join(ROOT, script as string)), `${script} in ${ROOT}`).toBe(true);

    const answer = await emit(first.url, key, secret);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ ok: true, ids: {} });
    expect((await emit(first.url, key, `${secret}x`)).json.error).toBe('bad_signature');

    const stopped = await first.stop();
    expect(stopped.code).toBe(0);
    expect(stopped.signal).toBeNull();
    // stdout is JSON log lines only; the credentials never reach the log.
    const logs = logLines(stopped.stdout);
    expect(logs.map((l) => l.msg)).toContain('stopped');
    expect(logs.every((l) => typeof l.level === 'number' && typeof l.time === 'string')).toBe(true);
    expect(stopped.stdout).not.toContain(secret);
    // The banner tells how to show the secret again, for this data folder; that command shows it.
    const show = /^ +npx realtime (apps show \S+ --secret --data \S+)$/m.exec(stopped.stderr)?.[1] ?? '';
    expect(show, stopped.stderr).not.toBe('');
    const shown = await run(show.split(' '));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^secret: +${secret}$`, 'm'));

    // Same data folder: the app is still there, so nothing new is created or printed.
    const second = await serve(['--data', data]);
    const again = await emit(second.url, key, secret);
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ ok: true, ids: {} });
    const secondExit = await second.stop();
    expect(secondExit.code).toBe(0);
    expect(secondExit.stdout).not.toContain('development app');
    expect(secondExit.stdout).not.toContain(secret);
    expect(secondExit.stderr).toBe('');
    expect(logLines(secondExit.stdout).map((l) => l.msg)).toContain('stopped');
  });
});
describe('serve --config', () => {
  it('upserts the apps of the file; a plan without ask is refused with 403 not_included', async () => {
    const data = tempDir();
    const config = writeConfig({
      apps: [
        {
          key: 'full',
          secret: SECRET_A,
          name: 'Full app',
          webhook: 'https://example.com/hook',
          features: [...FEATURES],
        },
        { key: 'small', secret: SECRET_B, features: ['history'] },
      ],
    });
    const server = await serve(['--data', data, '--config', config]);
    const full = client(server.url, 'full', SECRET_A);
    const small = client(server.url, 'small', SECRET_B);
    const ask = { path: `${API}/users/u1/ask`, body: JSON.stringify({ event: 'question', timeout: 50 }) };

    expect((await emit(server.url, 'full', SECRET_A)).json).toEqual({ ok: true, ids: {} });
    expect((await emit(server.url, 'small', SECRET_B)).json).toEqual({ ok: true, ids: {} });
    const refused = await send(small, ask);
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ ok: false, error: 'not_included' });
    const asked = await send(full, ask);
    expect(asked.status).toBe(200);
    expect(asked.json).toEqual({ ok: true, replies: [] });

    // What the file said is what is stored (the list never shows secrets).
    const listed = await run(['apps', 'list', '--json', '--data', data]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(SECRET_A);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({
        key: 'full',
        name: 'Full app',
        webhook: 'https://example.com/hook',
        features: [...FEATURES],
      }),
      expect.objectContaining({ key: 'small', name: 'small', webhook: '', features: ['history'] }),
    ]);
    const exit = await server.stop();
    expect(exit.code).toBe(0);
    expect(exit.stdout).not.toContain('development app');

    // Started again with a changed file: the entries are replaced (new secret, new plan).
    const changed = writeConfig({ apps: [{ key: 'small', secret: SECRET_A, features: ['ask'] }] });
    const again = await serve(['--data', data, '--config', changed]);
    expect((await emit(again.url, 'small', SECRET_B)).json.error).toBe('bad_signature');
    const now = await send(client(again.url, 'small', SECRET_A), ask);
    expect(now.status).toBe(200);
    expect(now.json).toEqual({ ok: true, replies: [] });
    expect((await again.stop()).code).toBe(0);
  });

  it('refuses an http:// webhook unless --allow-private-webhooks, which logs a loud warning', async () => {
    const config = writeConfig({ apps: [{ key: 'local', secret: SECRET_A, webhook: 'http://127.0.0.1:9/hook' }] });
    const refused = await run(['serve', '--port', '0', '--data', tempDir(), '--config', config]);
    expectOneLine(refused, 2, 'https://');
    expect(refused.stderr).toContain('--allow-private-webhooks');

    const server = await serve(['--data', tempDir(), '--config', config, '--allow-private-webhooks']);
    expect((await emit(server.url, 'local', SECRET_A)).json).toEqual({ ok: true, ids: {} });
    const exit = await server.stop();
    expect(exit.code).toBe(0);
    const warning = logLines(exit.stdout).find((l) => l.msg.includes('allow-private-webhooks'));
    expect(warning, exit.stdout).toBeDefined();
    expect(warning?.level).toBeGreaterThanOrEqual(40);
    expect(warning?.msg).toMatch(/production/i);
  });
});
describe('start failures', () => {
  let blocker: Server;
  let port: number;
  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    port = (blocker.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

  it('a port in use: non-zero exit, one clear line; the development app is shown by the next start', async () => {
    const data = tempDir();
    const exit = await run(['serve', '--port', String(port), '--data', data]);
    expectOneLine(exit, 1, 'EADDRINUSE');
    expect(exit.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is taken`);
    expect(exit.stderr).toContain('--port or REALTIME_PORT');
    // From the variable: the same line.
    const fromEnv = await run(['serve', '--data', data], { REALTIME_PORT: String(port) });
    expectOneLine(fromEnv, 1, `127.0.0.1:${port}: the port is taken`);
    // No app was made for a start that never listened.
    const listed = await run(['apps', 'list', '--json', '--data', data]);
    expect(listed.stdout).toBe('[]\n');

    const next = await serve(['--data', data]);
    await next.waitFor((s) => /^ {2}secret: +\S+$/m.test(s), 'the development app', 'stderr');
    const nextExit = await next.stop();
    expect(nextExit.code, JSON.stringify(nextExit)).toBe(0);
  });

  it('an address that is not local, or a data folder that is a file: one line, no stack trace', async () => {
    const file = join(tempDir(), 'a-file');
    writeFileSync(file, 'not a folder');
    const [host, dataFile, dataUnder] = await Promise.all([
      run(['serve', '--port', '0', '--host', '192.0.2.1', '--data', tempDir()]),
      run(['serve', '--port', '0', '--data', file]),
      run(['apps', 'list', '--data', join(file, 'sub')]),
    ]);
    expectOneLine(host, 1, 'cannot listen');
    expectOneLine(dataFile, 1, 'data folder');
    expectOneLine(dataUnder, 1, 'data folder');
  });
});
describe('config file timings', () => {
  it('takes webhook timings and the offline delay, and refuses bad ones in one line', async () => {
    const { spawnSync } = await import('node:child_process');
    const dir = mkdtempSync(join(tmpdir(), 'realtime-timings-'));
    const args = [
      'packages/server/dist/cli.js',
      'serve',
      '--port',
      '0',
      '--data',
      join(dir, 'd'),
      '--config',
      join(dir, 'c.json'),
    ];
    writeFileSync(
      join(dir, 'c.json'),
      JSON.stringify({
        apps: [],
        webhooks: { windowMs: 200, retryDelaysMs: [100, 200], answerMs: 500 },
        offlineDelayMs: 300,
      }),
    );
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('listening on')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const [config, mention] of [
      [{ webhooks: { windowMs: 0 } }, 'windowMs'],
      [{ webhooks: { retryDelaysMs: 'x' } }, 'retryDelaysMs'],
      [{ webhooks: { nope: 1 } }, 'nope'],
      [{ webhooks: { maxEvents: 101 } }, 'maxEvents'],
      [{ offlineDelayMs: -1 }, 'offlineDelayMs'],
    ] as const) {
      writeFileSync(join(dir, 'c.json'), JSON.stringify(config));
      const bad = spawnSync(process.execPath, args, { encoding: 'utf8' });
      expect(bad.status).toBe(2);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
      expect(bad.stderr).toContain(mention);
    }
    rmSync(dir, { recursive: true, force: true });
  });
});
