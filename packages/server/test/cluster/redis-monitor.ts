/**
 * What a run sent to a Redis Cluster's primaries, as their MONITOR showed it: every command, the
 * keys it named (a script's KEYS as given to EVALSHA/EVAL, a plain command's as Redis itself finds
 * them with COMMAND GETKEYS), and whether a script sent it (source `lua`).
 */
import { connect, type Socket } from 'node:net';
import { Redis } from 'ioredis';

export interface Touch {
  /** The primary's port. */
  port: number;
  command: string;
  keys: string[];
  /** Sent from inside a script (its keys must be among those given to the script). */
  lua: boolean;
}

export interface Monitor {
  /** Ends a phase: every command each primary ran since the last mark, and no more. */
  mark(): Promise<Touch[]>;
  close(): void;
}

const MARK_DEADLINE_MS = 5_000;
let marks = 0;

/** Starts MONITOR on each port (the primaries), keeping only commands that name keys under `prefix`. */
/**
 * One MONITOR line's arguments: `+<time> [<db> <client>|lua] "arg" "arg" ...`, each argument quoted,
 * with backslash escapes for quotes, backslashes, control characters and `x` plus two hex digits for
 * other bytes (Redis's sdscatrepr).
 */
export function parseMonitorLine(line: string): { args: string[]; lua: boolean } | undefined {
  const open = line.indexOf(' [');
  const close = line.indexOf('] ', open);
  if (!line.startsWith('+') || open < 0 || close < 0) return undefined;
  const lua = line.slice(open + 2, close).includes('lua');
  const args: string[] = [];
  let i = close + 2;
  while (i < line.length) {
    if (line[i] !== '"') {
      i++;
      continue;
    }
    let arg = '';
    i++;
    while (i < line.length && line[i] !== '"') {
      if (line[i] === '\\') {
        const next = line[i + 1];
        if (next === 'x') {
          arg += String.fromCharCode(Number.parseInt(line.slice(i + 2, i + 4), 16));
          i += 4;
          continue;
        }
        arg += { n: '\n', r: '\r', t: '\t', a: '\u0007', b: '\b' }[next ?? ''] ?? next ?? '';
        i += 2;
        continue;
      }
      arg += line[i];
      i++;
    }
    args.push(arg);
    i++;
  }
  return { args, lua };
}

/** MONITOR on a raw socket: ioredis's monitor mode can throw "Command queue state error" out of band. */
export function rawMonitor(port: number, onLine: (args: string[], lua: boolean) => void): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let buffer = '';
    let started = false;
    socket.setEncoding('latin1');
    socket.once('error', reject);
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\r\n'); end >= 0; end = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!started) {
          started = line === '+OK';
          if (started) resolve(socket);
          continue;
        }
        const parsed = parseMonitorLine(line);
        if (parsed) onLine(parsed.args, parsed.lua);
      }
    });
    socket.once('connect', () => socket.write('MONITOR\r\n'));
  });
}

/** Starts MONITOR on each port (the primaries), keeping only commands that name keys under `prefix`. */
export async function monitorPrimaries(ports: number[], prefix: string): Promise<Monitor> {
  const watches = await Promise.all(
    ports.map(async (port) => {
      const admin = new Redis({ host: '127.0.0.1', port });
      // A cluster ended under a failed test: its reconnects are not the test's errors.
      admin.on('error', () => {});
      const seen: Array<{ args: string[]; lua: boolean }> = [];
      const monitor = await rawMonitor(port, (args, lua) => seen.push({ args, lua }));
      return { port, admin, monitor, seen };
    }),
  );
  const admin = (watches[0] as (typeof watches)[number]).admin;
  /** The keys of plain commands, asked of Redis once per distinct command line. */
  const keysOf = async (lines: string[][]): Promise<string[][]> => {
    const distinct = new Map<string, string[]>();
    for (const args of lines) distinct.set(JSON.stringify(args), args);
    const pipeline = admin.pipeline();
    for (const args of distinct.values()) pipeline.call('COMMAND', 'GETKEYS', ...args);
    const answers = (await pipeline.exec()) ?? [];
    const found = new Map<string, string[]>();
    [...distinct.keys()].forEach((line, i) => {
      const [error, keys] = answers[i] ?? [null, []];
      // A command with no keys (PING, CLUSTER, INFO) answers an error.
      found.set(line, error ? [] : (keys as string[]).map(String));
    });
    return lines.map((args) => found.get(JSON.stringify(args)) ?? []);
  };

  return {
    async mark() {
      const marker = `mark:${process.pid}:${++marks}`;
      const lines: Array<{ port: number; args: string[]; lua: boolean }> = [];
      for (const watch of watches) {
        await watch.admin.ping(marker);
        const deadline = Date.now() + MARK_DEADLINE_MS;
        const at = () => watch.seen.findIndex(({ args }) => args.includes(marker));
        while (at() < 0) {
          if (Date.now() > deadline) throw new Error(`MONITOR of ${watch.port} did not show ${marker}`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const end = at();
        for (const { args, lua } of watch.seen.splice(0, end + 1).slice(0, end)) {
          lines.push({ port: watch.port, args, lua });
        }
      }
      const isScript = (args: string[]) => /^eval(sha)?(_ro)?$/i.test(args[0] ?? '');
      const plain = lines.filter(({ args }) => !isScript(args));
      const plainKeys = await keysOf(plain.map(({ args }) => args));
      const keysByLine = new Map(plain.map((line, i) => [line, plainKeys[i] ?? []]));
      return lines
        .map((line) => ({
          port: line.port,
          command: (line.args[0] ?? '').toLowerCase(),
          // EVALSHA sha numkeys key...: the keys given to the script.
          keys: isScript(line.args) ? line.args.slice(3, 3 + Number(line.args[2])) : (keysByLine.get(line) ?? []),
          lua: line.lua,
        }))
        .filter((touch) => touch.keys.some((key) => key.startsWith(prefix)));
    },
    close() {
      for (const { admin: a, monitor } of watches) {
        monitor.destroy();
        a.disconnect();
      }
    },
  };
}

/** The hash tag of a key (what decides its slot): the text between its first `{` and the next `}`. */
export function tagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}
