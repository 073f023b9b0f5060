import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { App } from '../src/index.js';

export { expectOneLine } from './cli-process.js';

import { API, type RawAnswer, send } from './helpers.js';

/**
 * The CLI binary, spawned for real from its build (`npx tsc -b packages/protocol packages/server`
 * runs before the tests). Every child is killed after its test; every folder is a fresh temp one.
 */

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export const temps: string[] = [];
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'realtime-cli-'));
  temps.push(dir);
  return dir;
}

/** Working folder of every child: a stray default `./data` would land here, never in the repository. */
export let cwd: string;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Every child still running, and its end. */
export const running = new Map<ChildProcess, Promise<unknown>>();
/** Servers started by the current test (commands run to their end by themselves). */
export const servers = new Set<ChildProcess>();

export async function kill(children: Iterable<ChildProcess>): Promise<void> {
  const ends: Promise<unknown>[] = [];
  for (const child of children) {
    const end = running.get(child);
    if (!end) continue;
    child.kill('SIGKILL');
    ends.push(end);
  }
  await Promise.all(ends);
}

/**
 * Each CLI test file calls this once, at its top: its own working folder, its servers killed after
 * each test, its children and folders gone after the file. A function, not hooks at this module's
 * top, because the main project's workers import this module once for all the files they run.
 */
export function cliLifecycle(): void {
  beforeAll(() => {
    cwd = tempDir();
  });
  afterEach(async () => {
    await kill(servers);
    servers.clear();
  });
  afterAll(async () => {
    await kill([...running.keys()]);
    for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
}

export interface Child {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<Exit>;
  /** Resolves when the output so far (stdout, or stderr) satisfies the test; rejects when the process ends first. */
  waitFor: (test: (output: string) => boolean, what: string, stream?: 'stdout' | 'stderr') => Promise<string>;
}

/** The environment of the children: this one's, without any REALTIME_* variable of the machine. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
  return { ...env, ...extra };
}

export function start(args: string[], env: Record<string, string> = {}): Child {
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
export function run(args: string[], env: Record<string, string> = {}): Promise<Exit> {
  return start(args, env).exited;
}

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** The log lines of stdout: every line is one JSON object (the development app block goes to stderr). */
export function logLines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogLine);
}

export const LISTENING = /^listening on (http:\/\/127\.0\.0\.1:(\d+))$/;

export interface Serving extends Child {
  url: string;
  /** SIGTERM, then the exit. */
  stop: () => Promise<Exit>;
}

export async function serve(args: string[], env: Record<string, string> = {}): Promise<Serving> {
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
export function client(url: string, key: string, secret: string): { url: string; app: App } {
  return {
    url,
    app: { key, secret, name: '', webhook: '', features: [], rateLimit: { perSecond: 1, burst: 1 } },
  };
}

export const EVENT = { rooms: ['lobby'], event: 'hello', data: { text: 'hi' } };

export function emit(url: string, key: string, secret: string): Promise<RawAnswer> {
  return send(client(url, key, secret), { path: `${API}/emit`, body: JSON.stringify(EVENT) });
}

/** Retries until the answer has the wanted status (the server may keep an app for a moment). */
export async function eventually(attempt: () => Promise<RawAnswer>, status: number): Promise<RawAnswer> {
  for (let i = 0; ; i++) {
    const answer = await attempt();
    if (answer.status === status || i >= 100) return answer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function writeConfig(value: unknown): string {
  const path = join(tempDir(), 'realtime.json');
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

export const SECRET_A = 'secret-a-0123456789-abcdefghijkl';
export const SECRET_B = 'secret-b-0123456789-abcdefghijkl';

/** A port free a moment ago (for a child that must be told its port through the environment). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
