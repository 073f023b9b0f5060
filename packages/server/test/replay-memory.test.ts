import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Realtime } from '@realtime/node';
import { CLOSE, SOCKET_PATH } from '@realtime/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { compareIds, signToken } from './gateway-tools.js';

/**
 * Replay memory is bounded per page, measured on a real server process: the built server
 * (`packages/server/dist`, built before the tests like the CLI's) runs in a child process, so its
 * resident memory is its own. A room keeps 200 events of about 1 MB; four pages join with `last: 200`
 * and never read. Each may cost the server one page of history and its bounded queue, not the room:
 * they are closed as slow consumers (4200) once their replay stalls, and a page that reads still
 * gets all 200 in order.
 */

const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const APP = {
  key: 'replay_mem',
  secret: 'replay-memory-secret-0123456789',
  name: 'replay',
  webhook: '',
  features: ['history', 'presence', 'ask', 'webhooks', 'sealed'],
  rateLimit: { perSecond: 100_000, burst: 100_000 },
};
const ROOM = 'big-room';
const EVENTS = 200;
/** Data of each event: a JSON string of about 1 MB, under the 1,048,576-byte limit. */
const DATA = 'x'.repeat(1_000_000);
const STALLED_PAGES = 4;
const STALL_MS = 1500;
/** Generous bound on what four stalled pages may add to the server's resident memory (the goal is < 50 MB). */
const GROWTH_BOUND_MB = 120;

const SERVER_SCRIPT = `
const { startServer } = await import(process.env.SERVER_DIST);
const app = JSON.parse(process.env.SERVER_APP);
const server = await startServer({
  host: '127.0.0.1',
  port: 0,
  dataDir: process.env.SERVER_DATA,
  logLevel: 'silent',
  apps: [app],
  gateway: { replayStallMs: Number(process.env.SERVER_STALL_MS) },
});
process.stdout.write(JSON.stringify({ url: server.url }) + '\\n');
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
`;

interface Child {
  process: ChildProcess;
  url: string;
  pid: number;
}

const children: ChildProcess[] = [];
const dataDir = mkdtempSync(join(tmpdir(), 'realtime-replay-mem-'));

afterAll(async () => {
  for (const child of children) await stop(child);
  rmSync(dataDir, { recursive: true, force: true });
});

function startChild(): Promise<Child> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', SERVER_SCRIPT], {
    env: {
      ...process.env,
      SERVER_DIST: DIST,
      SERVER_APP: JSON.stringify(APP),
      SERVER_DATA: dataDir,
      SERVER_STALL_MS: String(STALL_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${err}`)), 15_000);
    child.once('exit', (code) => reject(new Error(`the server exited (${code}): ${err}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0] ?? '';
      if (!out.includes('\n')) return;
      clearTimeout(timer);
      resolve({ process: child, url: (JSON.parse(line) as { url: string }).url, pid: child.pid ?? 0 });
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Resident memory of a process, in MB (file-backed pages included, as `VmRSS` counts them). */
function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

async function slowCloses(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^realtime_slow_consumer_closes_total (\d+)/m.exec(text)?.[1] ?? 0);
}

interface Page {
  ws: WebSocket;
  closed: Promise<number>;
}

/** A page that has said hello and got welcome. */
async function openPage(url: string): Promise<Page> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${SOCKET_PATH}?site=${APP.key}`);
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(JSON.stringify({ t: 'hello', v: 1 })));
    ws.once('message', (data) => {
      const frame = JSON.parse(data.toString()) as { t?: string };
      if (frame.t === 'welcome') resolve();
      else reject(new Error(`expected welcome, got ${data.toString().slice(0, 200)}`));
    });
  });
  return { ws, closed };
}

function sendJoin(ws: WebSocket, token: string): Promise<void> {
  return new Promise((resolve, reject) =>
    ws.send(JSON.stringify({ t: 'join', ref: 1, room: ROOM, token, last: EVENTS }), (error) =>
      error ? reject(error) : resolve(),
    ),
  );
}

describe('replay memory', () => {
  it(`${STALLED_PAGES} pages that join with last: ${EVENTS} over ~1 MB events and never read are closed with 4200; memory stays bounded; a reading page gets all ${EVENTS} in order`, async () => {
    // Fill the room through the API of a first run, then measure a fresh run on the same data: its
    // memory holds nothing of the emits, so what it gains is what the replays cost.
    const writer = await startChild();
    const sdk = new Realtime({ url: writer.url, key: APP.key, secret: APP.secret, timeoutMs: 60_000 });
    const emitted: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const ids = await sdk.emit({ rooms: [ROOM], event: 'big', data: `${i}:${DATA}`, history: { [ROOM]: [200, 1] } });
      emitted.push(ids[ROOM] ?? '');
    }
    await stop(writer.process);

    const server = await startChild();
    const token = await signToken({ room: ROOM, exp: Math.floor(Date.now() / 1000) + 600 }, { secret: APP.secret });
    const stalled = await Promise.all(Array.from({ length: STALLED_PAGES }, () => openPage(server.url)));
    const before = rssMb(server.pid);

    // Each joins, then stops reading its socket: whatever the server sends piles up on its side.
    for (const page of stalled) {
      await sendJoin(page.ws, token);
      (page.ws as unknown as { _socket: Socket })._socket.pause();
    }
    let peak = before;
    const joinedAt = Date.now();
    let closes = 0;
    while (closes < STALLED_PAGES && Date.now() - joinedAt < STALL_MS + 8000) {
      for (let i = 0; i < 10; i++) {
        peak = Math.max(peak, rssMb(server.pid));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      closes = await slowCloses(server.url);
    }
    const closedAfter = Date.now() - joinedAt;
    const growth = peak - before;
    console.log(
      `replay memory: RSS ${before.toFixed(1)} MB before, peak ${peak.toFixed(1)} MB with ${STALLED_PAGES} stalled pages: +${growth.toFixed(1)} MB; closed after ${closedAfter} ms (stall time ${STALL_MS} ms)`,
    );
    expect(closes).toBe(STALLED_PAGES);
    expect(growth).toBeLessThan(GROWTH_BOUND_MB);

    // Read again: each page finds its close, 4200, after what was queued before it.
    for (const page of stalled) (page.ws as unknown as { _socket: Socket })._socket.resume();
    const codes = await Promise.all(stalled.map((page) => page.closed));
    expect(codes).toEqual(Array(STALLED_PAGES).fill(CLOSE.slowConsumer));

    // A page that reads gets the whole replay, in order, each event whole.
    const reader = await openPage(server.url);
    const got: { id: string; data: string }[] = [];
    let replay = -1;
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${got.length} of ${EVENTS} events came`)), 60_000);
      reader.ws.on('message', (raw) => {
        const frame = JSON.parse(raw.toString()) as { t: string; id?: string; data?: string; replay?: number };
        if (frame.t === 'joined') replay = frame.replay ?? -1;
        if (frame.t === 'event') got.push({ id: frame.id ?? '', data: frame.data ?? '' });
        if (got.length === EVENTS) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await sendJoin(reader.ws, token);
    await done;
    expect(replay).toBe(EVENTS);
    expect(got.map((e) => e.id)).toEqual(emitted);
    for (let i = 1; i < got.length; i++) expect(compareIds(got[i - 1]?.id ?? '', got[i]?.id ?? '')).toBeLessThan(0);
    for (const [i, event] of got.entries()) expect(event.data === `${i}:${DATA}`).toBe(true);
    reader.ws.close(1000);
    await reader.closed;
  }, 180_000);
});
