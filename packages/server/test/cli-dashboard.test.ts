import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashDashboardPassword } from '@realtime/server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type CliExit, CliProcesses, expectOneLine } from './cli-process.js';
import { type RawAnswer, send, startTestServer } from './helpers.js';

/**
 * The dashboard from the CLI (docs/dashboard.md, "Turning it on"), spawned for real from its build
 * (`npx tsc -b packages/protocol packages/server` runs before the tests): `realtime dashboard-password`
 * turns the password on standard input into its hash, and `realtime serve` takes the hash from
 * `--dashboard-password-hash-file`, REALTIME_DASHBOARD_PASSWORD_HASH_FILE, `--dashboard-password-hash`
 * (with a warning: ps shows it), REALTIME_DASHBOARD_PASSWORD_HASH or the config file's `dashboard`;
 * without one the dashboard answers 404, and a hash not of the form stops the start in one line.
 */

const PASSWORD = 'correct horse battery staple';
const HASH_FORM = /^scrypt\$16384\$8\$1\$[^$]+\$[^$]+$/;
const SESSION = '/dashboard/api/session';

const cli = new CliProcesses('realtime-cli-dashboard-');
const tempDir = () => cli.tempDir();
const writeConfig = (value: unknown) => cli.writeConfig(value);
const start = (args: string[], env: Record<string, string> = {}, stdin?: string) => cli.start(args, env, stdin);
afterEach(() => cli.killAll());
afterAll(() => cli.cleanup());

/** `realtime serve` on a free port of 127.0.0.1 in a fresh data folder; its URL once it listens. */
function serve(args: string[], env: Record<string, string> = {}): Promise<string> {
  return start(['serve', '--port', '0', '--data', tempDir(), ...args], env).url;
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
    expectOneLine(exit, 2, '--dashboard-password-hash');
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
    expectOneLine(byVariable, 2, 'REALTIME_DASHBOARD_PASSWORD_HASH');
    expectOneLine(byConfig, 2, 'dashboard');
  });
});

/** A file holding `text` (a hash as dashboard-password prints it, newline included); its path. */
function hashFile(text: string): string {
  const path = join(tempDir(), 'dashboard-hash');
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

const FLAG_WARNING = /"level":40,.*"msg":"the dashboard password hash was given on the command line/;

/** `realtime serve` in a fresh data folder until it listens, then stopped: its URL checked by `check`, its log. */
async function serveThen(args: string[], env: Record<string, string>, check: (url: string) => Promise<void>) {
  const run = start(['serve', '--port', '0', '--data', tempDir(), ...args], env);
  await check(await run.url);
  const [exit] = await cli.kill([run.child], 'SIGTERM');
  return exit as CliExit;
}

describe('the hash from a file, and the flag warned against', () => {
  it('--dashboard-password-hash-file turns it on (a trailing newline is not part of it), with no warning', async () => {
    const exit = await serveThen(['--dashboard-password-hash-file', hashFile(`${hash}\n`)], {}, async (url) => {
      await expectSignsIn(url, PASSWORD);
      await expectWrongPassword(url, 'not the password');
    });
    expect(exit.stdout).not.toMatch(FLAG_WARNING);
  });

  it('REALTIME_DASHBOARD_PASSWORD_HASH_FILE turns it on; the file flag wins over the hash variable', async () => {
    await serveThen([], { REALTIME_DASHBOARD_PASSWORD_HASH_FILE: hashFile(hash) }, (url) =>
      expectSignsIn(url, PASSWORD),
    );
    await serveThen(
      ['--dashboard-password-hash-file', hashFile(hash)],
      { REALTIME_DASHBOARD_PASSWORD_HASH: envHash },
      async (url) => {
        await expectSignsIn(url, PASSWORD);
        await expectWrongPassword(url, 'the variable password');
      },
    );
  });

  it('--dashboard-password-hash works but logs a warning naming the file and the variable; the variable does not', async () => {
    const byFlag = await serveThen(['--dashboard-password-hash', hash], {}, (url) => expectSignsIn(url, PASSWORD));
    expect(byFlag.stdout).toMatch(FLAG_WARNING);
    expect(byFlag.stdout).toContain('--dashboard-password-hash-file or REALTIME_DASHBOARD_PASSWORD_HASH');
    const byVariable = await serveThen([], { REALTIME_DASHBOARD_PASSWORD_HASH: hash }, (url) =>
      expectSignsIn(url, PASSWORD),
    );
    expect(byVariable.stdout).not.toMatch(FLAG_WARNING);
  });

  it('a file missing, or not holding a hash, stops serve in one line naming where it came from, exit 2', async () => {
    const missing = join(tempDir(), 'no-such-file');
    const [byFlag, malformed, byVariable] = await Promise.all([
      start(['serve', '--port', '0', '--data', tempDir(), '--dashboard-password-hash-file', missing]).exited,
      start(['serve', '--port', '0', '--data', tempDir(), '--dashboard-password-hash-file', hashFile(PASSWORD)]).exited,
      start(['serve', '--port', '0', '--data', tempDir()], { REALTIME_DASHBOARD_PASSWORD_HASH_FILE: missing }).exited,
    ]);
    expectOneLine(byFlag, 2, '--dashboard-password-hash-file');
    expect(byFlag.stderr).toContain('ENOENT');
    expectOneLine(malformed, 2, '--dashboard-password-hash-file');
    expect(malformed.stderr).not.toContain(PASSWORD);
    expectOneLine(byVariable, 2, 'REALTIME_DASHBOARD_PASSWORD_HASH_FILE');
  });

  it('the hash and the file from the same place are refused together, exit 2', async () => {
    const exit = await start([
      'serve',
      '--port',
      '0',
      '--data',
      tempDir(),
      '--dashboard-password-hash',
      hash,
      '--dashboard-password-hash-file',
      hashFile(hash),
    ]).exited;
    expectOneLine(exit, 2, 'not both');
  });
});
