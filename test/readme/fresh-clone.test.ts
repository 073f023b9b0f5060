import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLEAN_ENV, killGroups, NPX, run, tryReadmeCommands } from './readme-cli.js';

/**
 * `npm run test:fresh-clone` (not part of `npm test`: minutes, and CI's own run is on a fresh
 * clone): the committed HEAD cloned into a temp folder, ONE install (`npm ci`, as the README's test
 * command does), then every `npx realtime ...` line of the README there.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const INSTALL_MS = 900_000;
const dir = mkdtempSync(join(tmpdir(), 'realtime-clone-'));
const clone = join(dir, 'repo');
const groups = new Set<number>();

beforeAll(async () => {
  execFileSync('git', ['clone', '--quiet', ROOT, clone], { stdio: 'ignore' });
  const install = await run('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: clone,
    env: CLEAN_ENV,
    timeoutMs: INSTALL_MS,
  });
  expect(install.code, `npm ci failed:\n${install.stdout}\n${install.stderr}`).toBe(0);
}, INSTALL_MS + 60_000);

afterAll(() => {
  killGroups(groups);
  rmSync(dir, { recursive: true, force: true });
});

describe('a fresh clone after one npm ci', () => {
  it('names its root so that it cannot shadow the CLI', () => {
    const name = (JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { name: string }).name;
    expect(name).not.toBe('realtime');
  });

  it('runs every npx realtime command of the README', async () => {
    await tryReadmeCommands(clone, CLEAN_ENV, groups);
  }, 180_000);

  it('the bin says in one line when the build is missing', async () => {
    const dist = join(clone, 'packages/server/dist');
    renameSync(dist, `${dist}.off`);
    try {
      const exit = await run(NPX, ['realtime', '--help'], {
        cwd: clone,
        env: { ...CLEAN_ENV, npm_config_offline: 'true' },
      });
      expect(exit.code).toBe(1);
      // npm may add its own warnings (npm warn ...); the CLI's is one line.
      const own = exit.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('npm '));
      expect(own, exit.stderr).toHaveLength(1);
      expect(own[0]).toMatch(/^realtime: .*npm run build/);
    } finally {
      renameSync(`${dist}.off`, dist);
    }
  }, 60_000);
});
