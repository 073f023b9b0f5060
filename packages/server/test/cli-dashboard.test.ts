import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashDashboardPassword } from '@realtime/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RawAnswer, send, startTestServer } from './helpers.js';

/**
 * The dashboard from the CLI (docs/dashboard.md, "Turning it on"), spawned for real from its build
 * (`npx tsc -b packages/protocol packages/server` runs before the tests): `realtime dashboard-password`
 * turns the password on standard input into its hash, and `realtime serve` takes the hash from
 * `--dashboard-password-hash`, REALTIME_DASHBOARD_PASSWORD_HASH or the config file's `dashboard`;
 * without one the dashboard answers 404, and a hash not of the form stops the start in one line.
 */

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const PASSWORD = 'correct horse battery staple';
const HASH_FORM = /^scrypt\$16384\$8\$1\$[^$]+\$[^$]+$/;
const SESSION = '/dashboard/api/session';

const temps: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-cli-dashboard-'));
  temps.push(dir);
  return dir;
}

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Every child still running, and its end. */
const running = new Map<ChildProcess, Promise<Exit>>();
afterEach(async () => {
  const ends = [...running.entries()].map(([child, end]) => {
    child.kill('SIGKILL');
    return end;
  });
  await Promise.all(ends);
});
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

interface Child {
  exited: Promise<Exit>;
  /** The port once the server logs "listening"; rejects if the CLI ends first. */
  port: Promise<number>;
}

/** The CLI with this environment less any REALTIME_* variable of the machine, in a temp folder. */
function start(args: string[], env: Record<string, string> = {}, stdin?: string): Child {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: tempDir(),
    env: { ...clean, ...env },
    stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (stdin !== undefined) child.stdin?.end(stdin);
  let stdout = '';
  let stderr = '';
  let listening: (port: number) => void = () => undefined;
  const port = new Promise<number>((resolve) => {
    listening = resolve;
  });
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
    const found = /"msg":"listening on http:\/\/127\.0\.0\.1:(\d+)"/.exec(stdout);
    if (found?.[1]) listening(Number(found[1]));
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('close', (code) => {
      running.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
  running.set(child, exited);
  const listeningPort = Promise.race([
    port,
    exited.then((exit) => Promise.reject(new Error(`the CLI ended: ${exit.stderr}`))),
  ]);
  listeningPort.catch(() => undefined);
  return { exited, port: listeningPort };
}

/** `realtime serve` on a free port of 127.0.0.1 in a fresh data folder; its URL once it listens. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<string> {
  const port = await start(['serve', '--port', '0', '--data', tempDir(), ...args], env).port;
  return `http://127.0.0.1:${port}`;
}

function writeConfig(value: unknown): string {
  const path = join(tempDir(), 'realtime.json');
  writeFileSync(path, JSON.stringify(value));
  return path;
}

/** Only `url` is used by an unsigned request. */
function signIn(url: string, password: string): Promise<RawAnswer> {
  const server = {
    url,
    app: { key: '', secret: '', name: '', webhook: '', features: [], rateLimit: { perSecond: 1, burst: 1 } },
  };
  return send(server, { method: 'POST', path: SESSION, body: JSON.stringify({ password }), unsigned: true });
}

async function expectSignsIn(url: string, password: string): Promise<void> {
  const answer = await signIn(url, password);
  expect(answer.status, answer.text).toBe(200);
  expect(answer.json).toEqual({ ok: true, csrf: expect.any(String) });
  expect(String(answer.headers['set-cookie'])).toMatch(/^rt_dashboard=/);
}

async function expectWrongPassword(url: string, password: string): Promise<void> {
  const answer = await signIn(url, password);
  expect(answer.status, answer.text).toBe(401);
  expect(answer.json).toEqual({ ok: false, error: 'wrong_password', message: expect.any(String) });
}

/** A refused start: exit 2, exactly one `realtime: ` line on stderr naming `includes`, no stack trace. */
function expectOneLine(exit: Exit, includes: string): void {
  expect(exit.code, exit.stderr).toBe(2);
  expect(exit.stderr.endsWith('\n'), exit.stderr).toBe(true);
  const lines = exit.stderr.slice(0, -1).split('\n');
  expect(lines, exit.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^realtime: /);
  expect(lines[0]).toContain(includes);
  expect(exit.stderr).not.toMatch(/\bat .*:\d+:\d+/);
  expect(exit.stdout).toBe('');
}

let hash: string;
let envHash: string;
let configHash: string;
beforeAll(async () => {
  [hash, envHash, configHash] = await Promise.all([
    hashDashboardPassword(PASSWORD),
    hashDashboardPassword('the variable password'),
    hashDashboardPassword('the config password'),
  ]);
});

describe('realtime dashboard-password', () => {
  it('reads the password on stdin and prints its scrypt hash, a new salt each time; the service takes it', async () => {
    const [first, second] = await Promise.all([
      start(['dashboard-password'], {}, PASSWORD).exited,
      start(['dashboard-password'], {}, PASSWORD).exited,
    ]);
    for (const exit of [first, second]) {
      expect(exit.code, exit.stderr).toBe(0);
      expect(exit.stdout.endsWith('\n')).toBe(true);
      expect(exit.stdout.slice(0, -1)).toMatch(HASH_FORM);
      expect(exit.stdout).not.toContain(PASSWORD);
      expect(exit.stderr).not.toContain(PASSWORD);
    }
    expect(first.stdout).not.toBe(second.stdout);
    const printed = first.stdout.slice(0, -1);
    const server = await startTestServer({ dashboard: { passwordHash: printed } });
    try {
      await expectSignsIn(server.url, PASSWORD);
      await expectWrongPassword(server.url, `${PASSWORD} `);
    } finally {
      await server.close();
    }
  });
});

describe('realtime serve and the dashboard', () => {
  it('without a hash: the dashboard answers 404 not_found', async () => {
    const url = await serve([]);
    const answer = await signIn(url, PASSWORD);
    expect(answer.status, answer.text).toBe(404);
    expect(answer.json).toEqual({ ok: false, error: 'not_found', message: expect.any(String) });
  });

  it('--dashboard-password-hash turns it on, with a hash printed by dashboard-password', async () => {
    const made = await start(['dashboard-password'], {}, PASSWORD).exited;
    expect(made.code, made.stderr).toBe(0);
    const url = await serve(['--dashboard-password-hash', made.stdout.trim()]);
    await expectSignsIn(url, PASSWORD);
    await expectWrongPassword(url, 'not the password');
  });

  it('REALTIME_DASHBOARD_PASSWORD_HASH turns it on', async () => {
    const url = await serve([], { REALTIME_DASHBOARD_PASSWORD_HASH: hash });
    await expectSignsIn(url, PASSWORD);
  });

  it('the config file\'s "dashboard": { "passwordHash" } turns it on', async () => {
    const url = await serve(['--config', writeConfig({ dashboard: { passwordHash: hash } })]);
    await expectSignsIn(url, PASSWORD);
  });

  it('a flag wins over its variable (not even read then), and either over the config file', async () => {
    const config = writeConfig({ dashboard: { passwordHash: configHash } });
    const byFlag = await serve(['--config', config, '--dashboard-password-hash', hash], {
      REALTIME_DASHBOARD_PASSWORD_HASH: 'not a hash',
    });
    await expectSignsIn(byFlag, PASSWORD);
    await expectWrongPassword(byFlag, 'the config password');
    const byVariable = await serve(['--config', config], { REALTIME_DASHBOARD_PASSWORD_HASH: envHash });
    await expectSignsIn(byVariable, 'the variable password');
    await expectWrongPassword(byVariable, 'the config password');
  });

  const malformed = [
    PASSWORD,
    'scrypt$16384$8$1$c2FsdHNhbHRzYWx0',
    'bcrypt$16384$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNo',
    'scrypt$16384$8$1$$',
    'scrypt$16384$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNo$extra',
  ];

  it.for(malformed)('a malformed hash by flag stops serve in one line, exit 2, nothing stored: %s', async (bad) => {
    const data = tempDir();
    const exit = await start(['serve', '--port', '0', '--data', data, '--dashboard-password-hash', bad]).exited;
    expectOneLine(exit, '--dashboard-password-hash');
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);
  });

  it('a malformed hash by variable or config file stops serve in one line naming it, exit 2', async () => {
    const bad = 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0';
    const [byVariable, byConfig] = await Promise.all([
      start(['serve', '--port', '0', '--data', tempDir()], { REALTIME_DASHBOARD_PASSWORD_HASH: bad }).exited,
      start([
        'serve',
        '--port',
        '0',
        '--data',
        tempDir(),
        '--config',
        writeConfig({ dashboard: { passwordHash: bad } }),
      ]).exited,
    ]);
    expectOneLine(byVariable, 'REALTIME_DASHBOARD_PASSWORD_HASH');
    expectOneLine(byConfig, 'dashboard');
  });
});
