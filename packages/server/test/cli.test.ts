import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FEATURES } from '@realtime/protocol';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import { API, type RawAnswer, send } from './helpers.js';
import { startReceiver } from './receiver.js';
import { startRedis, type TestRedis } from './redis-server.js';

/**
 * The CLI binary, spawned for real from its build (`npx tsc -b packages/protocol packages/server`
 * runs before the tests). Every child is killed after its test; every folder is a fresh temp one.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

const temps: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-cli-'));
  temps.push(dir);
  return dir;
}

/** Working folder of every child: a stray default `./data` would land here, never in the repository. */
let cwd: string;
beforeAll(() => {
  cwd = tempDir();
});
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Every child still running, and its end. */
const running = new Map<ChildProcess, Promise<unknown>>();
/** Servers started by the current test (commands run to their end by themselves). */
const servers = new Set<ChildProcess>();

async function kill(children: Iterable<ChildProcess>): Promise<void> {
  const ends: Promise<unknown>[] = [];
  for (const child of children) {
    const end = running.get(child);
    if (!end) continue;
    child.kill('SIGKILL');
    ends.push(end);
  }
  await Promise.all(ends);
}

afterEach(async () => {
  await kill(servers);
  servers.clear();
});
afterAll(() => kill([...running.keys()]));

interface Child {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<Exit>;
  /** Resolves when the output so far (stdout, or stderr) satisfies the test; rejects when the process ends first. */
  waitFor: (test: (output: string) => boolean, what: string, stream?: 'stdout' | 'stderr') => Promise<string>;
}

/** The environment of the children: this one's, without any REALTIME_* variable of the machine. */
function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
  return { ...env, ...extra };
}

function start(args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
    for (const wake of waiters) wake();
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
    for (const wake of waiters) wake();
  });
  let done = false;
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      done = true;
      running.delete(child);
      for (const wake of waiters) wake();
      resolve({ code, signal, stdout, stderr });
    });
  });
  running.set(child, exited);
  const waitFor = (test: (out: string) => boolean, what: string, stream: 'stdout' | 'stderr' = 'stdout') =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const output = stream === 'stdout' ? stdout : stderr;
        if (test(output)) {
          waiters.delete(check);
          resolve(output);
        } else if (done) {
          waiters.delete(check);
          reject(new Error(`the CLI ended before ${what}\nstdout: ${stdout}\nstderr: ${stderr}`));
        }
      };
      waiters.add(check);
      check();
    });
  return { child, stdout: () => stdout, stderr: () => stderr, exited, waitFor };
}

/** Runs a CLI command to its end. */
function run(args: string[], env: Record<string, string> = {}): Promise<Exit> {
  return start(args, env).exited;
}

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** The log lines of stdout: every line is one JSON object (the development app block goes to stderr). */
function logLines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogLine);
}

const LISTENING = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/;

interface Serving extends Child {
  url: string;
  /** SIGTERM, then the exit. */
  stop: () => Promise<Exit>;
}

async function serve(args: string[], env: Record<string, string> = {}): Promise<Serving> {
  const child = start(['serve', '--port', '0', ...args], env);
  servers.add(child.child);
  const out = await child.waitFor((s) => logLines(s).some((l) => LISTENING.test(l.msg)), 'listening');
  const line = logLines(out).find((l) => LISTENING.test(l.msg)) as LogLine;
  const [, url, port] = LISTENING.exec(line.msg) as RegExpExecArray;
  expect(Number(port)).toBeGreaterThan(0);
  return {
    ...child,
    url: url as string,
    stop: () => {
      child.child.kill('SIGTERM');
      return child.exited;
    },
  };
}

/** Only key and secret are used by `send`. */
function client(url: string, key: string, secret: string): { url: string; app: App } {
  return {
    url,
    app: { key, secret, name: '', webhook: '', features: [], rateLimit: { perSecond: 1, burst: 1 } },
  };
}

const EVENT = { rooms: ['lobby'], event: 'hello', data: { text: 'hi' } };

function emit(url: string, key: string, secret: string): Promise<RawAnswer> {
  return send(client(url, key, secret), { path: `${API}/emit`, body: JSON.stringify(EVENT) });
}

/** Retries until the answer has the wanted status (the server may keep an app for a moment). */
async function eventually(attempt: () => Promise<RawAnswer>, status: number): Promise<RawAnswer> {
  for (let i = 0; ; i++) {
    const answer = await attempt();
    if (answer.status === status || i >= 100) return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A refusal: exit 2, exactly one line on stderr naming the problem, no stack trace, nothing on stdout. */
function expectOneLine(exit: Exit, code: number, includes: string): void {
  expect(exit.code, exit.stderr).toBe(code);
  expect(exit.stderr.endsWith('\n'), exit.stderr).toBe(true);
  const lines = exit.stderr.slice(0, -1).split('\n');
  expect(lines, exit.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^realtime: /);
  expect(lines[0]).toContain(includes);
  expect(exit.stderr).not.toMatch(/\bat .*:\d+:\d+/);
  expect(exit.stdout).toBe('');
}

function writeConfig(value: unknown): string {
  const path = join(tempDir(), 'realtime.json');
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

const SECRET_A = 'secret-a-0123456789-abcdefghijkl';
const SECRET_B = 'secret-b-0123456789-abcdefghijkl';

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

describe('apps commands', () => {
  it('create, list, rotate-secret on a running server, set-webhook', async () => {
    const data = tempDir();
    const created = await run([
      'apps',
      'create',
      '--name',
      'Shop',
      '--features',
      'ask,history',
      '--json',
      '--data',
      data,
    ]);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout) as App;
    expect(app).toMatchObject({ name: 'Shop', features: ['ask', 'history'], webhook: '' });
    expect(app.key).toMatch(/^[A-Za-z0-9._-]{1,64}$/);
    expect(app.secret.length).toBeGreaterThanOrEqual(32);

    const list = async () => {
      const exit = await run(['apps', 'list', '--json', '--data', data]);
      expect(exit.code, exit.stderr).toBe(0);
      return exit;
    };
    const listed = await list();
    expect(listed.stdout).not.toContain(app.secret);
    const apps = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(apps).toEqual([expect.objectContaining({ key: app.key, name: 'Shop', features: ['ask', 'history'] })]);
    expect(apps[0]).not.toHaveProperty('secret');

    // The same key twice is refused.
    expectOneLine(await run(['apps', 'create', '--key', app.key, '--data', data]), 2, 'exists already');

    const server = await serve(['--data', data]);
    expect((await emit(server.url, app.key, app.secret)).json).toEqual({ ok: true, ids: {} });
    const onlineAnswer = await send(client(server.url, app.key, app.secret), { path: `${API}/online?ids=u1` });
    expect(onlineAnswer.status).toBe(403);
    expect(onlineAnswer.json.error).toBe('not_included');

    const rotated = await run(['apps', 'rotate-secret', app.key, '--data', data]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const secret = /^secret: (\S+)\n$/.exec(rotated.stdout)?.[1] as string;
    expect(secret).toBeDefined();
    expect(secret).not.toBe(app.secret);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    const fresh = await eventually(() => emit(server.url, app.key, secret), 200);
    expect(fresh.json).toEqual({ ok: true, ids: {} });
    const old = await eventually(() => emit(server.url, app.key, app.secret), 401);
    expect(old.status).toBe(401);
    expect(old.json.error).toBe('bad_signature');

    const set = await run(['apps', 'set-webhook', app.key, 'https://example.com/hook', '--data', data]);
    expect(set.code, set.stderr).toBe(0);
    expect((JSON.parse((await list()).stdout) as App[])[0]?.webhook).toBe('https://example.com/hook');
    expectOneLine(
      await run(['apps', 'set-webhook', app.key, 'http://example.com/hook', '--data', data]),
      2,
      'https://',
    );
    expect((JSON.parse((await list()).stdout) as App[])[0]?.webhook).toBe('https://example.com/hook');
    const cleared = await run(['apps', 'set-webhook', app.key, '', '--data', data]);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect((JSON.parse((await list()).stdout) as App[])[0]?.webhook).toBe('');

    const [rotateUnknown, webhookUnknown] = await Promise.all([
      run(['apps', 'rotate-secret', 'no-such-app', '--data', data]),
      run(['apps', 'set-webhook', 'no-such-app', 'https://example.com/hook', '--data', data]),
    ]);
    expectOneLine(rotateUnknown, 2, '"no-such-app"');
    expectOneLine(webhookUnknown, 2, '"no-such-app"');

    expect((await server.stop()).code).toBe(0);
  });

  it('a store that refuses a write: one line saying so, exit 1, nothing stored', async () => {
    const data = tempDir();
    expect((await run(['apps', 'list', '--data', data])).code).toBe(0);
    // The file's own refusal, as a disk that fails would give: the store answers a StoreError.
    const db = new Database(join(data, 'realtime.db'));
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON apps BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    db.close();
    const [create, serveConfig, serveFirst] = await Promise.all([
      run(['apps', 'create', '--key', 'shop', '--data', data]),
      // The config's apps, stored before the port opens.
      run([
        'serve',
        '--port',
        '0',
        '--data',
        data,
        '--config',
        writeConfig({ apps: [{ key: 'a', secret: SECRET_A }] }),
      ]),
      // The development app, stored once the server listens: it stops again.
      run(['serve', '--port', '0', '--data', data]),
    ]);
    expectOneLine(create, 1, 'refused by the test');
    expectOneLine(serveConfig, 1, 'refused by the test');
    expect(serveFirst.code, serveFirst.stderr).toBe(1);
    expect(serveFirst.stderr).toMatch(/^realtime: [^\n]*refused by the test[^\n]*\n$/);
    expect(serveFirst.stdout).not.toContain('listening on');
    expect((await run(['apps', 'list', '--json', '--data', data])).stdout).toBe('[]\n');
  });

  it('keygen prints 32 random bytes as 43 base64url characters, different each time', async () => {
    const [a, b] = await Promise.all([run(['keygen']), run(['keygen'])]);
    for (const exit of [a, b]) {
      expect(exit.code, exit.stderr).toBe(0);
      expect(exit.stdout).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
      expect(Buffer.from(exit.stdout.trim(), 'base64url')).toHaveLength(32);
    }
    expect(a.stdout).not.toBe(b.stdout);
  });
});

/** A port free a moment ago (for a child that must be told its port through the environment). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

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

describe('apps show', () => {
  it('shows an app with its secret hidden unless --secret, as text or JSON', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--name', 'Shop', '--key', 'shop', '--json', '--data', data]);
    const app = JSON.parse(created.stdout) as App;

    const text = await run(['apps', 'show', 'shop', '--data', data]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^key: +shop$/m);
    expect(text.stdout).toMatch(/^name: +Shop$/m);
    expect(text.stdout).toMatch(/^secret: +\(hidden; add --secret to show it\)$/m);
    expect(text.stdout).not.toContain(app.secret);

    const shown = await run(['apps', 'show', 'shop', '--secret', '--data', data]);
    expect(shown.stdout).toMatch(new RegExp(`^secret: +${app.secret}$`, 'm'));

    const json = await run(['apps', 'show', 'shop', '--json', '--data', data]);
    const { secret: _secret, ...withoutSecret } = app;
    expect(JSON.parse(json.stdout)).toEqual(withoutSecret);
    const jsonSecret = await run(['apps', 'show', 'shop', '--json', '--secret', '--data', data]);
    expect(JSON.parse(jsonSecret.stdout)).toEqual(app);

    expectOneLine(await run(['apps', 'show', 'nope', '--data', data]), 2, '"nope"');
    expectOneLine(await run(['apps', 'show', '--data', data]), 2, 'app key');
  });
});

describe('set-webhook and create --webhook follow the rule of delivery', () => {
  const refused = [
    'http://example.com/hook',
    'https://127.0.0.1/hook',
    'https://127.1/hook',
    'https://localhost:8443/hook',
    'https://10.1.2.3/hook',
    'https://192.168.0.10/hook',
    'https://169.254.169.254/latest',
    'https://[::1]/hook',
    'https://[::ffff:10.0.0.1]/hook',
    'https://[fd00::1]/hook',
  ];

  it('without --allow-private-webhooks: refuses what a production server refuses, takes public https', async () => {
    const data = tempDir();
    await run(['apps', 'create', '--key', 'k', '--data', data]);
    const results = await Promise.all(refused.map((url) => run(['apps', 'set-webhook', 'k', url, '--data', data])));
    for (const exit of results) expectOneLine(exit, 2, '--allow-private-webhooks');
    expectOneLine(await run(['apps', 'create', '--webhook', 'https://10.0.0.1/', '--data', data]), 2, 'private');
    for (const url of ['https://example.com/hook', 'https://8.8.8.8/hook']) {
      const exit = await run(['apps', 'set-webhook', 'k', url, '--data', data]);
      expect(exit.code, exit.stderr).toBe(0);
    }
  });

  it('with it (flag or REALTIME_ALLOW_PRIVATE_WEBHOOKS=1): takes http:// and loopback, still refuses the rest', async () => {
    const data = tempDir();
    await run(['apps', 'create', '--key', 'k', '--data', data]);
    for (const url of refused) {
      const exit = await run(['apps', 'set-webhook', 'k', url, '--data', data, '--allow-private-webhooks']);
      expect(exit.code, `${url}: ${exit.stderr}`).toBe(0);
    }
    const fromEnv = await run(['apps', 'set-webhook', 'k', 'http://127.0.0.1:9/hook', '--data', data], {
      REALTIME_ALLOW_PRIVATE_WEBHOOKS: '1',
    });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    for (const url of ['ftp://127.0.0.1/hook', 'https://user:pw@127.0.0.1/hook', 'http://127.0.0.1/#frag']) {
      expectOneLine(await run(['apps', 'set-webhook', 'k', url, '--data', data, '--allow-private-webhooks']), 2, url);
    }
  });

  it('a loopback address taken with the flag is delivered to by a server started with the flag', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--key', 'hooked', '--json', '--data', data]);
    const app = JSON.parse(created.stdout) as App;
    const receiver = await startReceiver(app);
    try {
      const set = await run([
        'apps',
        'set-webhook',
        'hooked',
        receiver.url,
        '--data',
        data,
        '--allow-private-webhooks',
      ]);
      expect(set.code, set.stderr).toBe(0);
      const server = await serve(['--data', data, '--allow-private-webhooks']);
      const answer = await send(client(server.url, app.key, app.secret), {
        method: 'POST',
        path: `${API}/webhooks/test`,
      });
      expect(answer.json).toMatchObject({ ok: true, delivered: true, status: 204 });
      expect(receiver.events('webhook.test')).toHaveLength(1);
      expect((await server.stop()).code).toBe(0);
    } finally {
      await receiver.close();
    }
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
    expect(exit.stderr).toContain('cannot listen');
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
