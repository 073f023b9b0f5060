import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * First run exactly as the README says: the committed HEAD cloned into a temp folder, ONE install
 * (`npm ci`, as the README's test command does), then every `npx realtime ...` line of the README.
 * Slow: the install compiles better-sqlite3 and builds every package (about a minute on an idle machine).
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: HERE, encoding: 'utf8' }).trim();
const INSTALL_MS = 900_000;

/** npx beside this node, so the clone runs with the same Node as the tests. */
const NPX = existsSync(join(dirname(process.execPath), 'npx')) ? join(dirname(process.execPath), 'npx') : 'npx';

/** This environment without what `npm test` says about the repository it runs in. */
const ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    ([name]) => !/^(npm_package_|npm_lifecycle_|REALTIME_)/.test(name) && name !== 'INIT_CWD',
  ),
);

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

let dir: string;
let clone: string;

/** npx offline: the CLI must come from the clone, never from the registry. */
const NPX_ENV = { ...ENV, npm_config_offline: 'true' };

function run(command: string, args: string[], timeoutMs = 60_000, env = ENV, input?: string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: clone,
      env,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (input !== undefined) child.stdin?.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `npx realtime ...`, exactly as the README writes it. */
const realtime = (...args: string[]) => run(NPX, ['realtime', ...args], 60_000, NPX_ENV);
/** The same, with `input` on stdin. */
const realtimeWithInput = (input: string, ...args: string[]) => run(NPX, ['realtime', ...args], 60_000, NPX_ENV, input);
const SLOW_MS = 180_000;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'realtime-clone-'));
  clone = join(dir, 'repo');
  execFileSync('git', ['clone', '--quiet', ROOT, clone], { stdio: 'ignore' });
  const install = await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], INSTALL_MS);
  expect(install.code, `npm ci failed:\n${install.stdout}\n${install.stderr}`).toBe(0);
}, INSTALL_MS + 60_000);

/** Process groups of servers still running (killed when a test failed half-way). */
const groups = new Set<number>();

afterAll(() => {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a fresh clone after one npm ci', () => {
  it('names its root so that it cannot shadow the CLI', () => {
    const name = (JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { name: string }).name;
    expect(name).not.toBe('realtime');
  });

  it(
    'npx realtime --help',
    async () => {
      const help = await realtime('--help');
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/^Usage:/);
      expect(help.stdout).toContain('realtime serve');
      expect(help.stdout).toContain('REALTIME_PORT');
    },
    SLOW_MS,
  );

  it(
    'runs every npx realtime command of the README',
    async () => {
      const readme = readFileSync(join(clone, 'README.md'), 'utf8');
      const inReadme = new Set(
        [...readme.matchAll(/npx realtime ([a-z-]+(?: [a-z][a-z-]*)?)/g)].map((m) => m[1] as string),
      );
      const tried = new Set<string>();
      const ok = async (line: string, ...args: string[]) => {
        const exit = await realtime(...args);
        expect(exit.code, `npx realtime ${args.join(' ')}\n${exit.stderr}`).toBe(0);
        tried.add(line);
        return exit.stdout;
      };

      expect(await ok('--help', '--help')).toMatch(/^Usage:/);
      expect(await ok('keygen', 'keygen')).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
      const app = JSON.parse(
        await ok('apps create', 'apps', 'create', '--name', 'Shop', '--key', 'shop', '--json'),
      ) as {
        key: string;
        secret: string;
      };
      expect(app.key).toBe('shop');
      expect(await ok('apps list', 'apps', 'list')).toMatch(/^shop\tShop\t/m);
      const shown = await ok('apps show', 'apps', 'show', 'shop');
      expect(shown).toMatch(/^key: +shop$/m);
      expect(shown).not.toContain(app.secret);
      expect(await ok('apps show', 'apps', 'show', 'shop', '--secret')).toContain(app.secret);
      expect(await ok('apps set-webhook', 'apps', 'set-webhook', 'shop', 'https://example.com/realtime')).toContain(
        'https://example.com/realtime',
      );
      expect(await ok('apps rotate-secret', 'apps', 'rotate-secret', 'shop')).toMatch(/^secret: \S{32,}\n$/);
      // A rotation with an overlap: both secrets work until the old one retires.
      expect(await ok('apps rotate-secret', 'apps', 'rotate-secret', 'shop', '--overlap', '24h')).toMatch(
        /^secret: \S{32,}/,
      );
      expect(await ok('apps sign-webhooks', 'apps', 'sign-webhooks', 'shop', 'old')).not.toBe('');
      expect(await ok('apps show', 'apps', 'show', 'shop')).toMatch(/^rotation: +old secret accepted until /m);
      await ok('apps retire-secret', 'apps', 'retire-secret', 'shop');
      expect(await ok('apps show', 'apps', 'show', 'shop')).toMatch(/^rotation: +-$/m);
      const hashed = await realtimeWithInput('correct horse battery staple', 'dashboard-password');
      expect(hashed.code, hashed.stderr).toBe(0);
      expect(hashed.stdout).toMatch(/^scrypt\$/);
      tried.add('dashboard-password');

      // serve: up, listening, then SIGTERM to its process group, as Ctrl-C in a terminal signals
      // npx and the server together (npx alone does not pass SIGTERM on).
      const server: ChildProcess = spawn(NPX, ['realtime', 'serve', '--port', '0'], {
        cwd: clone,
        env: NPX_ENV,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      const group = server.pid as number;
      groups.add(group);
      const exited = new Promise<number | null>((resolve) => server.once('close', resolve));
      let out = '';
      const listening = await new Promise<boolean>((resolve) => {
        server.stdout?.setEncoding('utf8').on('data', (text: string) => {
          out += text;
          if (out.includes('listening on http://127.0.0.1:')) resolve(true);
        });
        void exited.then(() => resolve(false));
      });
      expect(listening, out).toBe(true);
      tried.add('serve');
      process.kill(-group, 'SIGTERM');
      await exited;
      groups.delete(group);
      expect(out).toContain('"msg":"stopped"');

      for (const line of inReadme) expect(tried, `README's "npx realtime ${line}" was not tried`).toContain(line);
    },
    SLOW_MS,
  );

  it(
    'the bin says in one line when the build is missing',
    async () => {
      const dist = join(clone, 'packages/server/dist');
      renameSync(dist, `${dist}.off`);
      try {
        const exit = await realtime('--help');
        expect(exit.code).toBe(1);
        // npm may add its own warnings (npm warn ...); the CLI's is one line.
        const own = exit.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('npm '));
        expect(own, exit.stderr).toHaveLength(1);
        expect(own[0]).toMatch(/^realtime: .*npm run build/);
      } finally {
        renameSync(`${dist}.off`, dist);
      }
    },
    SLOW_MS,
  );
});
