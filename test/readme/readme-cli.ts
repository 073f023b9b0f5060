/**
 * The README's `npx realtime ...` lines, run as a user runs them in a checkout (the workspace in
 * `npm test`: CI's is a fresh clone after one `npm ci`; a clone of its own in
 * `npm run test:fresh-clone`). Every command the README names must be tried.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';

export interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** npx beside this node, so the checkout runs with the same Node as the tests. */
export const NPX = existsSync(join(dirname(process.execPath), 'npx')) ? join(dirname(process.execPath), 'npx') : 'npx';

/** This environment without what `npm test` says about the repository it runs in. */
export const CLEAN_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    ([name]) => !/^(npm_package_|npm_lifecycle_|REALTIME_)/.test(name) && name !== 'INIT_CWD',
  ),
);

export function run(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string | undefined>; timeoutMs?: number; input?: string },
): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Runs every `npx realtime` command README.md names in `checkout` (npx offline: the CLI must come
 * from the checkout, never the registry), with `env` (which says where the data folder is).
 * `groups` collects the process groups of servers still running, for the caller to kill.
 */
export async function tryReadmeCommands(
  checkout: string,
  env: Record<string, string | undefined>,
  groups: Set<number>,
): Promise<void> {
  const npxEnv = { ...env, npm_config_offline: 'true' };
  const realtime = (args: string[], input?: string) =>
    run(NPX, ['realtime', ...args], { cwd: checkout, env: npxEnv, ...(input === undefined ? {} : { input }) });
  const readme = readFileSync(join(checkout, 'README.md'), 'utf8');
  const inReadme = new Set(
    [...readme.matchAll(/npx realtime ([a-z-]+(?: [a-z][a-z-]*)?)/g)].map((m) => m[1] as string),
  );
  const tried = new Set<string>();
  const ok = async (line: string, args: string[], input?: string) => {
    const exit = await realtime(args, input);
    expect(exit.code, `npx realtime ${args.join(' ')}\n${exit.stderr}`).toBe(0);
    tried.add(line);
    return exit.stdout;
  };

  const help = await ok('--help', ['--help']);
  expect(help).toMatch(/^Usage:/);
  expect(help).toContain('realtime serve');
  expect(help).toContain('REALTIME_PORT');
  expect(await ok('keygen', ['keygen'])).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
  const app = JSON.parse(await ok('apps create', ['apps', 'create', '--name', 'Shop', '--key', 'shop', '--json'])) as {
    key: string;
    secret: string;
  };
  expect(app.key).toBe('shop');
  expect(await ok('apps list', ['apps', 'list'])).toMatch(/^shop\tShop\t/m);
  const shown = await ok('apps show', ['apps', 'show', 'shop']);
  expect(shown).toMatch(/^key: +shop$/m);
  expect(shown).not.toContain(app.secret);
  expect(await ok('apps show', ['apps', 'show', 'shop', '--secret'])).toContain(app.secret);
  expect(await ok('apps set-webhook', ['apps', 'set-webhook', 'shop', 'https://example.com/realtime'])).toContain(
    'https://example.com/realtime',
  );
  expect(await ok('apps rotate-secret', ['apps', 'rotate-secret', 'shop'])).toMatch(/^secret: \S{32,}\n$/);
  // A rotation with an overlap: both secrets work until the old one retires.
  expect(await ok('apps rotate-secret', ['apps', 'rotate-secret', 'shop', '--overlap', '24h'])).toMatch(
    /^secret: \S{32,}/,
  );
  expect(await ok('apps sign-webhooks', ['apps', 'sign-webhooks', 'shop', 'old'])).not.toBe('');
  expect(await ok('apps show', ['apps', 'show', 'shop'])).toMatch(/^rotation: +old secret accepted until /m);
  await ok('apps retire-secret', ['apps', 'retire-secret', 'shop']);
  expect(await ok('apps show', ['apps', 'show', 'shop'])).toMatch(/^rotation: +-$/m);
  expect(await ok('dashboard-password', ['dashboard-password'], 'correct horse battery staple')).toMatch(/^scrypt\$/);

  // serve: up, listening, then SIGTERM to its process group, as Ctrl-C in a terminal signals npx and
  // the server together.
  const server: ChildProcess = spawn(NPX, ['realtime', 'serve', '--port', '0'], {
    cwd: checkout,
    env: npxEnv,
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
}

/** Kills the process groups left (a test that failed half-way). */
export function killGroups(groups: Set<number>): void {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  groups.clear();
}
