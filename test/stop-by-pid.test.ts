import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

/**
 * The documented start commands, run as a user runs them (`npm start`, `npx realtime serve`, in the
 * repository, from the build), stopped by a signal to the pid the user sees: npm's. Each runs in a
 * process group of its own, so "the service is gone" is "no process of the group is left".
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const temps: string[] = [];
const groups = new Set<number>();

interface Run {
  child: ChildProcess;
  output: () => string;
  /** The wrapper's own end (npm's), as its parent sees it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(command: string, args: string[], env: Record<string, string>): Run {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  if (child.pid !== undefined) groups.add(child.pid);
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (text: string) => (output += text));
  child.stderr?.setEncoding('utf8').on('data', (text: string) => (output += text));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-stop-'));
  temps.push(dir);
  return dir;
}

async function until(test: () => boolean, what: string, run: Run, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${run.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Whether any process of the group `pgid` is left. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** Whether 127.0.0.1:`port` can be listened on now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The ports the run logged it listens on (the service's, and the demo's for npm start). */
async function listening(run: Run, count: number): Promise<number[]> {
  const ports = () => [...run.output().matchAll(/(?:listening on|Chat demo: open) http:\/\/127\.0\.0\.1:(\d+)/g)];
  await until(() => ports().length >= count, 'the start', run);
  return ports().map((found) => Number(found[1]));
}

async function expectAllGone(run: Run, ports: number[]): Promise<void> {
  const pgid = run.child.pid as number;
  await until(() => !groupAlive(pgid), 'every process of the command to end', run);
  groups.delete(pgid);
  for (const port of ports) expect(await portFree(port), `port ${port}`).toBe(true);
}

afterEach(() => {
  // A run a failed test left behind: its whole group, which this file started.
  for (const pgid of groups) {
    if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
  }
  groups.clear();
});
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('npm start stops on a signal to npm’s pid', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: the demo and the service drain, npm exits 0 once they did, both ports are free`, async () => {
      const run = start('npm', ['start'], { PORT: '0', DEMO_PORT: '0', DATA: tempDir() });
      const ports = await listening(run, 2);
      process.kill(run.child.pid as number, signal);
      expect(await run.exited).toEqual({ code: 0, signal: null });
      await expectAllGone(run, ports);
    });
  }

  it('Ctrl-C (SIGINT to the whole group: npm forwards its copy too) drains and exits 0, not the forced 1', async () => {
    const run = start('npm', ['start'], { PORT: '0', DEMO_PORT: '0', DATA: tempDir() });
    const ports = await listening(run, 2);
    process.kill(-(run.child.pid as number), 'SIGINT');
    expect(await run.exited).toEqual({ code: 0, signal: null });
    await expectAllGone(run, ports);
  });
});

describe('npx realtime serve stops on a signal to npx’s pid', () => {
  it('SIGTERM: npm ends, the service sees its launcher gone, drains and ends, the port is free', async () => {
    const run = start('npx', ['realtime', 'serve', '--port', '0', '--data', tempDir()], {});
    const ports = await listening(run, 1);
    process.kill(run.child.pid as number, 'SIGTERM');
    await run.exited;
    await expectAllGone(run, ports);
    expect(run.output()).toContain('"signal":"launcher gone","msg":"draining and stopping"');
    // Its last line may still be in the pipe when the process is gone.
    await until(() => run.output().includes('"msg":"stopped"'), 'the service to log "stopped"', run, 5000);
  });

  it('Ctrl-C (SIGINT to the whole group) drains and ends every process, the port is free', async () => {
    const run = start('npx', ['realtime', 'serve', '--port', '0', '--data', tempDir()], {});
    const ports = await listening(run, 1);
    process.kill(-(run.child.pid as number), 'SIGINT');
    await run.exited;
    await expectAllGone(run, ports);
    await until(() => run.output().includes('"msg":"stopped"'), 'the service to log "stopped"', run, 5000);
    expect(run.output()).toContain('"signal":"SIGINT","msg":"draining and stopping"');
  });
});
