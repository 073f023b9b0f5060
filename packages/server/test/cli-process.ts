/**
 * The `realtime` CLI spawned for real from its build (`npx tsc -b packages/protocol packages/server`
 * runs before the tests), for the test files of its settings: each process in a temp folder, with the
 * machine's REALTIME_* variables left out, its output kept, and its listening address read from its log.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export interface CliExit {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  child: ChildProcess;
  exited: Promise<CliExit>;
  /** `http://host:port` once the server logs "listening"; rejects if the CLI ends first. */
  url: Promise<string>;
  /** The port of `url`. */
  port: Promise<number>;
}

/** The CLI processes and temp folders of one test file; `cleanup` after all its tests. */
export class CliProcesses {
  readonly #prefix: string;
  readonly #temps: string[] = [];
  /** Every child still running, and its end. */
  readonly #running = new Map<ChildProcess, Promise<CliExit>>();

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), this.#prefix));
    this.#temps.push(dir);
    return dir;
  }

  /** A config file of this JSON in a temp folder; its path. */
  writeConfig(value: unknown): string {
    const path = join(this.tempDir(), 'realtime.json');
    writeFileSync(path, JSON.stringify(value));
    return path;
  }

  /** The CLI with this environment (and `stdin`, when given) in a temp folder. */
  start(args: string[], env: Record<string, string> = {}, stdin?: string): CliRun {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: this.tempDir(),
      env: { ...clean, ...env },
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (stdin !== undefined) child.stdin?.end(stdin);
    let stdout = '';
    let stderr = '';
    let listening: (url: string) => void = () => undefined;
    const heard = new Promise<string>((resolve) => {
      listening = resolve;
    });
    child.stdout?.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      const found = /"msg":"listening on (http:\/\/[^"]+:\d+)"/.exec(stdout);
      if (found?.[1]) listening(found[1]);
    });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const exited = new Promise<CliExit>((resolve) => {
      child.once('close', (code) => {
        this.#running.delete(child);
        resolve({ code, stdout, stderr });
      });
    });
    this.#running.set(child, exited);
    const url = Promise.race([
      heard,
      exited.then((exit) => Promise.reject(new Error(`the CLI ended: ${exit.stderr}`))),
    ]);
    const port = url.then((text) => Number(new URL(text).port));
    // A refused start is awaited through `exited` only.
    url.catch(() => undefined);
    port.catch(() => undefined);
    return { child, exited, url, port };
  }

  /** Signals each of these children still running; their ends. */
  kill(which: Iterable<ChildProcess>, signal: NodeJS.Signals): Promise<CliExit[]> {
    const ends: Promise<CliExit>[] = [];
    for (const child of [...which]) {
      const end = this.#running.get(child);
      if (!end) continue;
      child.kill(signal);
      ends.push(end);
    }
    return Promise.all(ends);
  }

  /** Kills every child still running. */
  async killAll(): Promise<void> {
    await this.kill(this.#running.keys(), 'SIGKILL');
  }

  /** Kills every child and removes the temp folders. */
  async cleanup(): Promise<void> {
    await this.killAll();
    for (const dir of this.#temps.splice(0)) rmSync(dir, { recursive: true, force: true });
  }
}

/** A refusal: exit `code`, exactly one `realtime: ` line on stderr naming `includes`, no stack trace, nothing on stdout. */
export function expectOneLine(exit: CliExit, code: number, includes: string): void {
  expect(exit.code, exit.stderr).toBe(code);
  expect(exit.stderr.endsWith('\n'), exit.stderr).toBe(true);
  const lines = exit.stderr.slice(0, -1).split('\n');
  expect(lines, exit.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^realtime: /);
  expect(lines[0]).toContain(includes);
  expect(exit.stderr).not.toMatch(/\bat .*:\d+:\d+/);
  expect(exit.stdout).toBe('');
}
