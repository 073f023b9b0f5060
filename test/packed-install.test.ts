/**
 * The packages as a user gets them: `npm pack` of the four workspaces (over the build `npm test` has
 * just made), the tarballs installed with a plain `npm install <tarballs>` into an empty folder
 * outside the workspace, then, from that folder only: `npx realtime serve` (the packed
 * @realtime/server's bin), a Node program on the installed @realtime/node and @realtime/browser
 * (test/packed/node-check.mjs) and a Chromium page whose script esbuild bundles from the installed
 * @realtime/browser (test/packed/page.mjs): emit, join, send, ask, presence, both ways.
 *
 * The install is `--prefer-offline`: every tarball is in npm's cache after `npm ci`; the registry's
 * package lists (not kept by `npm ci`) are fetched once per machine, then come from the cache too.
 * better-sqlite3 is native: its install script (prebuild-install) looks for a prebuilt binary in a
 * local folder before GitHub. The folder holds the binary the workspace's own install made for the
 * same better-sqlite3 version and Node ABI (downloaded from GitHub, or compiled from source where
 * GitHub is out of reach, as on the machine this was written on), so the scratch install runs the
 * real install script without compiling SQLite again (a minute) and without the network; a version
 * or ABI that differs finds nothing there and compiles.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeChromium, launchChromium, servePages } from './browser/chromium.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['protocol', 'node', 'browser', 'server', 'react'] as const;
const INSTALL_MS = 240_000;

/** npm and npx beside this node, so the scratch project runs with the same Node (and ABI) as the tests. */
const bin = (name: string) =>
  existsSync(join(dirname(process.execPath), name)) ? join(dirname(process.execPath), name) : name;
const NPM = bin('npm');
const NPX = bin('npx');

/** This environment without what `npm test` says about the workspace it runs in. */
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

function run(command: string, args: string[], cwd: string, timeoutMs: number, env = ENV): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
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

/** What `npm pack --json` says of one package. */
interface Packed {
  name: string;
  filename: string;
  files: { path: string }[];
}

interface PackageJson {
  name: string;
  version: string;
  license: string;
  keywords?: string[];
  engines?: { node?: string };
  publishConfig?: { access?: string };
  repository?: { type: string; url: string; directory: string };
  exports: Record<string, Record<string, string> | string>;
  dependencies?: Record<string, string>;
  bin?: Record<string, string>;
}

let dir: string;
let app: string;
let packed: Packed[];
const installedPackage = (name: string) => join(app, 'node_modules', name);

/** A prebuild-install local prebuild of the workspace's better-sqlite3 binary (see the top). */
function localPrebuild(into: string): void {
  const source = join(ROOT, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  mkdirSync(into);
  execFileSync('tar', ['czf', join(into, name), '-C', source, 'build/Release/better_sqlite3.node']);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'realtime-packed-'));
  const tarballs = join(dir, 'tarballs');
  mkdirSync(tarballs);
  const workspaces = PACKAGES.flatMap((name) => ['-w', `@realtime/${name}`]);
  const pack = await run(NPM, ['pack', '--json', '--pack-destination', tarballs, ...workspaces], ROOT, 60_000);
  expect(pack.code, `npm pack failed:\n${pack.stderr}`).toBe(0);
  packed = JSON.parse(pack.stdout) as Packed[];
  for (const { name, files } of packed) {
    expect(
      files.map((f) => f.path),
      `${name} has no build: npm run build first`,
    ).toContain('dist/index.js');
  }

  app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  localPrebuild(join(dir, 'prebuilds'));
  writeFileSync(join(app, '.prebuild-installrc'), JSON.stringify({ 'local-prebuilds': join(dir, 'prebuilds') }));
  const install = await run(
    NPM,
    ['install', '--prefer-offline', '--no-audit', '--no-fund', ...packed.map((p) => join(tarballs, p.filename))],
    app,
    INSTALL_MS,
  );
  expect(install.code, `npm install failed:\n${install.stdout}\n${install.stderr}`).toBe(0);
}, INSTALL_MS + 90_000);

/** Process groups still running (a test failed half-way): killed by their pid. */
const groups = new Set<number>();
let browser: Browser | undefined;
let pages: { url: string; close(): Promise<void> } | undefined;

afterAll(async () => {
  await closeChromium(browser);
  await pages?.close();
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the packed packages', () => {
  it('ship a README, the LICENSE, public access, engines, repository, typed exports; maps only to shipped sources', () => {
    const license = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
    for (const short of PACKAGES) {
      const name = `@realtime/${short}`;
      const files = new Set(packed.find((p) => p.name === name)?.files.map((f) => f.path));
      const installed = installedPackage(name);
      expect(readFileSync(join(installed, 'LICENSE'), 'utf8'), name).toBe(license);
      expect(readFileSync(join(installed, 'README.md'), 'utf8'), name).toMatch(/npm install/);
      const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as PackageJson;
      expect(pkg.version).toBe('0.1.0');
      expect(pkg.license).toBe('MIT');
      expect(pkg.publishConfig?.access).toBe('public');
      expect(pkg.engines?.node).toMatch(/^>=20/);
      expect(pkg.keywords?.length).toBeGreaterThan(2);
      expect(pkg.repository).toMatchObject({ type: 'git', directory: `packages/${short}` });
      expect(pkg.exports['.']).toMatchObject({ types: './dist/index.d.ts' });
      expect(pkg.exports['./package.json']).toBe('./package.json');
      // As npm writes it: a leading ./ makes `npm publish` rewrite it with a warning.
      if (short === 'server') expect(pkg.bin).toEqual({ realtime: 'bin/realtime.js' });
      // Each other package of this repository by its version, resolved to the installed tarball.
      for (const [dependency, range] of Object.entries(pkg.dependencies ?? {})) {
        if (!dependency.startsWith('@realtime/')) continue;
        expect(range).toBe('0.1.0');
        expect(existsSync(join(installed, 'node_modules', dependency)), `${name} has its own ${dependency}`).toBe(
          false,
        );
        expect(lstatSync(installedPackage(dependency)).isSymbolicLink()).toBe(false);
      }
      for (const file of files) {
        expect(file, name).not.toMatch(/\.test\.|\/contract\//);
        if (/\.(js|d\.ts)$/.test(file)) {
          const linked = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(join(installed, file), 'utf8'))?.[1];
          if (linked) expect(files, `${name}/${file} -> ${linked}`).toContain(posix.join(posix.dirname(file), linked));
        }
        if (!file.endsWith('.map')) continue;
        const map = JSON.parse(readFileSync(join(installed, file), 'utf8')) as {
          sources: string[];
          sourcesContent?: (string | null)[];
        };
        map.sources.forEach((source, i) => {
          const shipped = files.has(posix.normalize(posix.join(posix.dirname(file), source)));
          expect(shipped || typeof map.sourcesContent?.[i] === 'string', `${name}/${file} -> ${source}`).toBe(true);
        });
      }
    }
  });

  it('type-check in a Node program (NodeNext) and in a page (bundler resolution, no Node types, declarations checked)', async () => {
    for (const file of ['types-node.ts', 'types-page.ts']) {
      writeFileSync(join(app, file), readFileSync(join(ROOT, 'test/packed', file)));
    }
    // The workspace's compiler (the user's own, in their project); @types/node is the one thing
    // taken from the workspace, as a Node program has it.
    const tsc = join(ROOT, 'node_modules/.bin/tsc');
    const common = ['--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2023,dom'];
    const nodeTypes = ['--types', 'node', '--typeRoots', join(ROOT, 'node_modules/@types')];
    const nodeFlags = ['--module', 'nodenext', '--moduleResolution', 'nodenext', '--skipLibCheck', ...nodeTypes];
    const nodeProgram = await run(tsc, [...common, ...nodeFlags, 'types-node.ts'], app, 60_000);
    expect(nodeProgram.code, nodeProgram.stdout + nodeProgram.stderr).toBe(0);
    const pageScript = await run(
      tsc,
      [...common, '--module', 'esnext', '--moduleResolution', 'bundler', '--types', '', 'types-page.ts'],
      app,
      60_000,
    );
    expect(pageScript.code, pageScript.stdout + pageScript.stderr).toBe(0);
  });

  it('serve with npx realtime; the installed SDKs in Node and in a Chromium page: emit, join, send, ask, presence', async () => {
    const data = join(dir, 'data');
    const npx = (...args: string[]) =>
      run(NPX, ['realtime', ...args], app, 60_000, { ...ENV, npm_config_offline: 'true' });
    const created = await npx('apps', 'create', '--name', 'Packed', '--key', 'packed', '--data', data, '--json');
    expect(created.code, created.stderr).toBe(0);
    const { key, secret } = JSON.parse(created.stdout) as { key: string; secret: string };

    // In its own process group: npx and the server under it end together, by the group's pid.
    const server: ChildProcess = spawn(NPX, ['realtime', 'serve', '--port', '0', '--data', data], {
      cwd: app,
      env: { ...ENV, npm_config_offline: 'true' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const group = server.pid as number;
    groups.add(group);
    const exited = new Promise<number | null>((resolve) => server.once('close', resolve));
    let log = '';
    server.stderr?.setEncoding('utf8').on('data', (text: string) => {
      log += text;
    });
    const url = await new Promise<string | undefined>((resolve) => {
      server.stdout?.setEncoding('utf8').on('data', (text: string) => {
        log += text;
        const found = /"msg":"listening on (http:\/\/127\.0\.0\.1:\d+)"/.exec(log);
        if (found) resolve(found[1]);
      });
      void exited.then(() => resolve(undefined));
    });
    expect(url, log).toBeDefined();
    const env = { ...ENV, REALTIME_URL: url as string, REALTIME_KEY: key, REALTIME_SECRET: secret };

    for (const file of ['node-check.mjs', 'page.mjs']) {
      writeFileSync(join(app, file), readFileSync(join(ROOT, 'test/packed', file)));
    }
    const bundled = await build({
      entryPoints: [join(app, 'page.mjs')],
      absWorkingDir: app,
      bundle: true,
      format: 'esm',
      platform: 'browser',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(bundled.metafile.inputs);
    // Everything from the scratch project, the SDK by its browser entry (not node.js, not ws).
    expect(inputs.filter((input) => input.startsWith('..') || input.startsWith('/'))).toEqual([]);
    expect(inputs).toContain('node_modules/@realtime/browser/dist/index.js');
    expect(inputs.filter((input) => input.includes('node_modules/ws/'))).toEqual([]);
    const script = bundled.outputFiles[0]?.text ?? '';
    const html =
      '<!doctype html><meta charset="utf-8"><title>packed</title><script type="module" src="/page.js"></script>';
    pages = await servePages((path) => {
      if (path === '/page.js') return { type: 'text/javascript', body: script };
      if (path === '/') return { type: 'text/html', body: html };
      return undefined;
    });

    browser = await launchChromium();
    const page = await browser.newPage();
    await page.goto(pages.url);
    await page.waitForFunction(() => typeof (window as unknown as { start?: unknown }).start === 'function');
    const tokens = await run(process.execPath, ['node-check.mjs', 'tokens', 'pat'], app, 30_000, env);
    expect(tokens.code, tokens.stderr).toBe(0);
    const members = await page.evaluate(
      (options) => (window as unknown as { start(o: unknown): Promise<string[]> }).start(options),
      { url, site: key, ...(JSON.parse(tokens.stdout) as { identity: string; roomToken: string }) },
    );
    expect(members).toEqual(['pat']);

    const checked = await run(process.execPath, ['node-check.mjs'], app, 60_000, env);
    expect(checked.code, checked.stderr).toBe(0);
    const seenInNode = JSON.parse(checked.stdout) as Record<string, unknown>;
    expect(seenInNode).toMatchObject({
      online: ['pat'],
      news: { headline: 'packed' },
      fromPage: { text: 'hi nia, from the page' },
      pageReplies: [{ data: { by: 'page', amount: 10 } }],
      nodeReplies: [{ data: { by: 'node', amount: 20 } }],
    });
    expect([...(seenInNode.members as string[])].sort()).toEqual(['nia', 'pat']);
    expect(seenInNode.sent).toMatch(/^\d+-\d+$/);
    expect(seenInNode.emitted).toMatch(/^\d+-\d+$/);

    // What reached the page may trail what the Node program saw by a moment: waited for, bounded.
    await page.waitForFunction(
      () => {
        const { seen } = window as unknown as { seen: { news: unknown[]; chat: { from: string }[]; sent?: string } };
        return seen.news.length > 0 && seen.chat.some((m) => m.from === 'nia') && seen.sent !== undefined;
      },
      undefined,
      { timeout: 10_000 },
    );
    const seenInPage = await page.evaluate(() => (window as unknown as { seen: unknown }).seen);
    expect(seenInPage).toMatchObject({
      joined: ['nia'],
      news: [{ headline: 'packed' }],
      sent: expect.stringMatching(/^\d+-\d+$/),
    });
    expect((seenInPage as { chat: unknown[] }).chat).toContainEqual({ from: 'nia', data: { text: 'hi from node' } });

    process.kill(-group, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      exited.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), 10_000);
      }),
    ]);
    clearTimeout(timer);
    expect(stopped, log).toBe(true);
    groups.delete(group);
    expect(log).toContain('"msg":"stopped"');
  }, 120_000);
});
