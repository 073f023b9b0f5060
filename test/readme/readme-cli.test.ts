import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CLEAN_ENV, killGroups, run, tryReadmeCommands } from './readme-cli.js';

/**
 * The README's CLI lines in this checkout, as a user runs them after its two commands (CI runs
 * `npm test` in a fresh clone after one `npm ci`; `npm run test:fresh-clone` makes a clone of its
 * own). The data folder is a temp one, so the checkout stays clean.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'realtime-readme-'));
const groups = new Set<number>();

afterAll(() => {
  killGroups(groups);
  rmSync(dir, { recursive: true, force: true });
});

describe('the README, in this checkout', () => {
  it('names the root package so that it cannot shadow the CLI', () => {
    const name = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string }).name;
    expect(name).not.toBe('realtime');
  });

  it('runs every npx realtime command it names', async () => {
    await tryReadmeCommands(ROOT, { ...CLEAN_ENV, REALTIME_DATA: join(dir, 'data') }, groups);
  }, 120_000);

  it('the bin says in one line, exit 1, when the build is missing', async () => {
    // The committed bin beside no dist/: what a checkout is before its build.
    const bin = join(dir, 'server/bin/realtime.js');
    mkdirSync(join(dir, 'server/bin'), { recursive: true });
    copyFileSync(join(ROOT, 'packages/server/bin/realtime.js'), bin);
    const exit = await run(process.execPath, [bin, '--help'], { cwd: dir, env: CLEAN_ENV });
    expect(exit.code).toBe(1);
    expect(exit.stdout).toBe('');
    expect(exit.stderr).toMatch(/^realtime: [^\n]*npm run build[^\n]*\n$/);
  });
});
