import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Realtime } from '@realtime/node';
import { checkWebhookSignature, deriveKey, LIMITS, SOCKET_PATH } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

/**
 * Crash safety of webhook delivery, against the real CLI (`packages/server/dist/cli.js`, built
 * before the tests). Pages send events on a room whose token reports them by the `emit` webhook;
 * the service is killed with SIGKILL at random moments and started again on the same data folder.
 * Every send the service acknowledged (`sent`) must reach the customer's server at least once.
 */

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

const KEY = 'crash';
const SECRET = 'crash-secret-0123456789-abcdefghijkl';
const HOOK_PATH = '/hooks/crash?app=crash';
const ROOM = 'crash-room';
const EVENT = 'tick';

const TARGET = 1000;
const KILLS = 10;
const PAGES = 5;
/** Sends under way at once, over all pages: they go in rounds of this many. */
const IN_FLIGHT = 20;
/** Sends per second over all pages: under the service's 100 frames/s per page, and spread over the kills. */
const SENDS_PER_SECOND = 120;
/** The receiver answers after up to this long (it has recorded the batch on arrival): kills land on tries under way. */
const ANSWER_DELAY_MS = 400;
/** The service's answer time (and so its tries' leases, a few seconds longer): well over ANSWER_DELAY_MS. */
const ANSWER_WINDOW_MS = 2000;
/** How long each killed run lives after it says it listens: before and after its first batch window closes. */
const KILL_AFTER_MS: [number, number] = [200, 2000];
/** How far into a round of sends a round-aligned kill lands. */
const ROUND_KILL_MS = 4;
const FINAL_ACK_MS = 20_000;
const FINAL_DELIVERY_MS = 15_000;

/**
 * Only for the moments of the kills (and the poll below): a kill lands at a random point of the run's
 * real time, before or after its batch windows close, on timers inside the service's own process
 * that no test clock reaches.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(test: () => boolean, ms: number, what: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what()}`);
    await sleep(25);
  }
}

// ---------------------------------------------------------------------------------------------
// The customer's webhook receiver

interface EmitSeen {
  /** The webhook event id (the same on every delivery of this event). */
  id: string;
  data: unknown;
  from: unknown;
  room: unknown;
  event: unknown;
  times: number;
}

interface Receiver {
  url: string;
  requests: number;
  /** Requests that failed the signature check or were not a batch: what was wrong. */
  refused: string[];
  /** Sizes of batches over the limit. */
  oversized: number[];
  largest: number;
  /** Events of every type, counted once per delivery. */
  eventsDelivered: number;
  /** Webhook event id -> deliveries. */
  byId: Map<string, number>;
  /** `emit` events by `event_id`. */
  emits: Map<string, EmitSeen>;
  /** One `event_id` under two webhook event ids: a send recorded twice. */
  conflicts: string[];
  /** X-Service-Batch -> sha256 of the first body; a batch sent again must be byte for byte the same. */
  batches: Map<string, string>;
  changedBatches: string[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const webhookKey = deriveKey(SECRET, 'webhook');
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.requests++;
      const raw = Buffer.concat(chunks);
      const header = (name: string) => {
        const value = req.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const problem = checkWebhookSignature({
        site: KEY,
        webhookKey,
        headers: {
          site: header('x-service-site'),
          timestamp: header('x-service-timestamp'),
          signature: header('x-service-signature'),
        },
        path: req.url ?? '',
        body: raw,
        nowMs: Date.now(),
      });
      if (problem || req.method !== 'POST' || req.url !== HOOK_PATH) {
        receiver.refused.push(`${req.method} ${req.url}: ${problem ?? 'wrong method or path'}`);
        res.writeHead(401).end();
        return;
      }
      let events: Record<string, unknown>[];
      try {
        const body = JSON.parse(raw.toString('utf8')) as { events?: unknown };
        if (!Array.isArray(body.events)) throw new Error('no events array');
        events = body.events as Record<string, unknown>[];
      } catch (error) {
        receiver.refused.push(`not a batch: ${(error as Error).message}`);
        res.writeHead(400).end();
        return;
      }
      const batch = header('x-service-batch') ?? '(no X-Service-Batch)';
      const digest = createHash('sha256').update(raw).digest('hex');
      const before = receiver.batches.get(batch);
      if (before === undefined) receiver.batches.set(batch, digest);
      else if (before !== digest) receiver.changedBatches.push(batch);
      receiver.largest = Math.max(receiver.largest, events.length);
      if (events.length > LIMITS.webhookEventsPerRequest) receiver.oversized.push(events.length);
      for (const event of events) {
        receiver.eventsDelivered++;
        const id = String(event.id);
        receiver.byId.set(id, (receiver.byId.get(id) ?? 0) + 1);
        if (event.type !== 'emit') continue;
        const eventId = String(event.event_id);
        const seen = receiver.emits.get(eventId);
        if (!seen) {
          receiver.emits.set(eventId, {
            id,
            data: event.data,
            from: event.from,
            room: event.room,
            event: event.event,
            times: 1,
          });
        } else {
          seen.times++;
          if (seen.id !== id) receiver.conflicts.push(`${eventId}: webhook ids ${seen.id} and ${id}`);
        }
      }
      // Taken on arrival; the answer comes a little later, so that kills also land on tries under way.
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          if (!res.destroyed) res.writeHead(204).end();
        },
        Math.floor(Math.random() * ANSWER_DELAY_MS),
      );
      timers.add(timer);
    });
  });
  const receiver: Receiver = {
    url: '',
    requests: 0,
    refused: [],
    oversized: [],
    largest: 0,
    eventsDelivered: 0,
    byId: new Map(),
    emits: new Map(),
    conflicts: [],
    batches: new Map(),
    changedBatches: [],
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${HOOK_PATH}`;
  return receiver;
}

// ---------------------------------------------------------------------------------------------
// The service, as a child process

interface Service {
  child: ChildProcess;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

const LISTENING = /^listening on (http:\/\/127\.0\.0\.1:\d+)$/;

/** Everything every run printed: log lines are checked at the end. */
const outputs: { run: number; stdout: string; stderr: string; exit?: string }[] = [];
/** Every child still running, and its end. */
const children = new Map<ChildProcess, Promise<unknown>>();

function logLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // A line cut by SIGKILL.
    }
  }
  return lines;
}

function startService(run: number, data: string, config: string): Promise<Service> {
  // `info`: the `listening on` line is an info line (`warn` would hide it); info says little else.
  const child = spawn(
    process.execPath,
    [
      CLI,
      'serve',
      '--port',
      '0',
      '--data',
      data,
      '--config',
      config,
      '--allow-private-webhooks',
      '--log-level',
      'info',
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: (typeof outputs)[number] = { run, stdout: '', stderr: '' };
  outputs.push(output);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    const end = (code: number | null, signal: NodeJS.Signals | null) => {
      children.delete(child);
      output.exit ??= `code ${code} signal ${signal}`;
      resolve({ code, signal });
    };
    child.once('close', end);
    child.once('error', (error) => {
      output.stderr += `spawn failed: ${error.message}\n`;
      end(null, null);
    });
  });
  children.set(child, exited);
  return new Promise<Service>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      child.kill('SIGKILL');
      reject(
        new Error(`run ${run}: no "listening on" line within 10 s\nstdout: ${output.stdout}\nstderr: ${output.stderr}`),
      );
    }, 10_000);
    child.stdout?.setEncoding('utf8').on('data', (text: string) => {
      output.stdout += text;
      if (done) return;
      for (const line of logLines(output.stdout)) {
        const match = LISTENING.exec(line.msg);
        if (match) {
          done = true;
          clearTimeout(timer);
          resolve({ child, url: match[1] as string, exited });
          return;
        }
      }
    });
    child.stderr?.setEncoding('utf8').on('data', (text: string) => {
      output.stderr += text;
    });
    void exited.then(({ code, signal }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(
        new Error(
          `run ${run} ended (${code}, ${signal}) before listening\nstdout: ${output.stdout}\nstderr: ${output.stderr}`,
        ),
      );
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The pages that produce events

interface ProducerPage {
  ws: WebSocket;
  ready: boolean;
  /** ref -> the producer's number of the send. */
  pending: Map<number, number>;
  nextRef: number;
}

/**
 * Pages that say hello with an identity, join the room and send events, keeping up to IN_FLIGHT
 * sends under way at a steady pace. `attach` points them at a (new) service; sends under way when
 * their socket goes are not acknowledged and never counted.
 */
class Producer {
  /** event_id -> the producer's number of the send it acknowledged. */
  readonly acked = new Map<string, number>();
  /** The same event id acknowledged twice (ids are unique within a room). */
  readonly repeatedIds: string[] = [];
  /** Sends under way when their service was killed. */
  lostInFlight = 0;
  /** Error frames the service answered (the test asks for none). */
  readonly errors: Record<string, unknown>[] = [];
  /** Pages that could not get going (connection refused, closed during join): expected around kills. */
  failedStarts = 0;
  readonly #identities: string[];
  readonly #tokens: string[];
  #pages: ProducerPage[] = [];
  #inFlight = 0;
  #issued = 0;
  #budget = 0;
  #budgetAt = Date.now();
  #turn = 0;
  readonly #timer: NodeJS.Timeout;
  readonly #roundWaiters = new Set<() => void>();

  constructor(identities: string[], tokens: string[]) {
    this.#identities = identities;
    this.#tokens = tokens;
    this.#timer = setInterval(() => this.#pump(), 10);
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Resolves when the next round of sends has gone out, or after `ms`. */
  nextRound(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#roundWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#roundWaiters.add(done);
    });
  }

  attach(url: string): void {
    this.detach();
    this.#pages = this.#identities.map((identity, i) => this.#open(url, identity, this.#tokens[i] as string));
  }

  /** Forgets the current pages (their service is gone): what they had under way is lost. */
  detach(): void {
    for (const page of this.#pages) this.#drop(page);
    this.#pages = [];
  }

  stop(): void {
    clearInterval(this.#timer);
    this.detach();
  }

  #drop(page: ProducerPage): void {
    page.ready = false;
    this.#inFlight -= page.pending.size;
    this.lostInFlight += page.pending.size;
    page.pending.clear();
    page.ws.removeAllListeners('message');
    page.ws.on('error', () => {});
    if (page.ws.readyState !== WebSocket.CLOSED) page.ws.terminate();
  }

  #open(url: string, identity: string, token: string): ProducerPage {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${SOCKET_PATH}?site=${encodeURIComponent(KEY)}`);
    const page: ProducerPage = { ws, ready: false, pending: new Map(), nextRef: 1 };
    let started = false;
    ws.on('error', () => {});
    ws.on('open', () => ws.send(JSON.stringify({ t: 'hello', v: 1, identity })));
    ws.on('close', () => {
      if (!started) this.failedStarts++;
      this.#drop(page);
    });
    ws.on('message', (raw) => {
      const frame = JSON.parse(raw.toString()) as Record<string, unknown>;
      switch (frame.t) {
        case 'welcome':
          ws.send(JSON.stringify({ t: 'join', ref: 0, room: ROOM, token }));
          return;
        case 'joined':
          started = true;
          page.ready = true;
          this.#pump();
          return;
        case 'sent': {
          const n = page.pending.get(frame.ref as number);
          if (n === undefined) return;
          page.pending.delete(frame.ref as number);
          this.#inFlight--;
          const id = String(frame.id);
          if (this.acked.has(id)) this.repeatedIds.push(id);
          this.acked.set(id, n);
          this.#pump();
          return;
        }
        case 'error': {
          this.errors.push(frame);
          const n = page.pending.get(frame.ref as number);
          if (n !== undefined) {
            page.pending.delete(frame.ref as number);
            this.#inFlight--;
          }
          return;
        }
        case 'ping':
          ws.send('{"t":"pong"}');
          return;
        default:
          // Room events of the other pages: not this test's business.
          return;
      }
    });
    return page;
  }

  #pump(): void {
    const now = Date.now();
    this.#budget = Math.min(IN_FLIGHT, this.#budget + ((now - this.#budgetAt) / 1000) * SENDS_PER_SECOND);
    this.#budgetAt = now;
    // Rounds: a new one starts with the last one answered and a whole round of budget, so ~IN_FLIGHT go at once.
    if (this.#inFlight === 0 && this.#budget < Math.min(IN_FLIGHT, TARGET - this.acked.size)) return;
    const before = this.#inFlight;
    while (this.#budget >= 1 && this.#inFlight < IN_FLIGHT && this.acked.size + this.#inFlight < TARGET) {
      const ready = this.#pages.filter((p) => p.ready && p.ws.readyState === WebSocket.OPEN);
      if (ready.length === 0) return;
      const page = ready[this.#turn++ % ready.length] as ProducerPage;
      const ref = page.nextRef++;
      const n = this.#issued++;
      page.pending.set(ref, n);
      this.#inFlight++;
      this.#budget--;
      page.ws.send(JSON.stringify({ t: 'send', ref, room: ROOM, event: EVENT, data: { n } }));
    }
    if (before === 0 && this.#inFlight > 0) for (const wake of [...this.#roundWaiters]) wake();
  }
}

// ---------------------------------------------------------------------------------------------

let dir: string;
let receiver: Receiver | undefined;
let producer: Producer | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'realtime-webhook-crash-'));
});

afterAll(async () => {
  producer?.stop();
  const ends = [...children.values()];
  for (const child of children.keys()) child.kill('SIGKILL');
  await Promise.all(ends);
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('webhook delivery across crashes', () => {
  it(`delivers every acknowledged page send at least once through ${KILLS} SIGKILLs`, { timeout: 60_000 }, async () => {
    const began = Date.now();
    receiver = await startReceiver();
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        apps: [{ key: KEY, secret: SECRET, name: 'crash', webhook: receiver.url, features: ['webhooks'] }],
        // A killed run's tries stay leased to it for the answer time and a margin; the receiver
        // answers within ANSWER_DELAY_MS, so a short answer time lets the next runs take them over soon.
        webhooks: { answerMs: ANSWER_WINDOW_MS },
      }),
    );
    const data = join(dir, 'data');

    const realtime = new Realtime({ url: 'http://127.0.0.1:1', key: KEY, secret: SECRET });
    const users = Array.from({ length: PAGES }, (_, i) => `producer-${i}`);
    const identities = await Promise.all(users.map((user) => realtime.identityToken(user)));
    const tokens = await Promise.all(
      users.map((userId) => realtime.roomToken(ROOM, { userId, send: [EVENT], w: [EVENT] })),
    );
    await realtime.close();
    const live = new Producer(identities, tokens);
    producer = live;

    // Ten runs killed at random moments: while pages send, while batch windows are open, while tries are under way.
    const kills: { run: number; afterMs: number; acked: number; inFlight: number; received: number }[] = [];
    for (let run = 1; run <= KILLS; run++) {
      const service = await startService(run, data, config);
      live.attach(service.url);
      const afterMs = KILL_AFTER_MS[0] + Math.floor(Math.random() * (KILL_AFTER_MS[1] - KILL_AFTER_MS[0]));
      await sleep(afterMs);
      // Every other kill lands in a round of sends (a few ms into it), while pages still produce.
      if (run % 2 === 1 && live.acked.size < TARGET) {
        await live.nextRound(500);
        await sleep(Math.floor(Math.random() * ROUND_KILL_MS));
      }
      kills.push({ run, afterMs, acked: live.acked.size, inFlight: live.inFlight, received: receiver.emits.size });
      service.child.kill('SIGKILL');
      const exit = await service.exited;
      expect(exit.signal, `run ${run} should have died of SIGKILL`).toBe('SIGKILL');
      live.detach();
    }

    // The last run: finish producing, then deliver everything.
    const last = await startService(KILLS + 1, data, config);
    live.attach(last.url);
    await until(
      () => live.acked.size >= TARGET,
      FINAL_ACK_MS,
      () => `${TARGET} acknowledged sends (have ${live.acked.size}; errors ${JSON.stringify(live.errors.slice(-3))})`,
    );
    const missing = () => [...live.acked.keys()].filter((id) => !receiver?.emits.has(id));
    await until(
      () => missing().length === 0,
      FINAL_DELIVERY_MS,
      () => {
        const lost = missing();
        const logs = outputs.map((o) => `run ${o.run} (${o.exit ?? 'running'}):\n${o.stdout}${o.stderr}`).join('\n');
        return `every acknowledged event at the receiver: ${lost.length} missing, e.g. ${JSON.stringify(lost.slice(0, 10))}\n${logs}`;
      },
    );
    const elapsed = Date.now() - began;
    live.stop();

    // Every acknowledged send arrived, as the event it was.
    expect(live.acked.size).toBe(TARGET);
    expect(live.repeatedIds).toEqual([]);
    expect(live.errors).toEqual([]);
    for (const [eventId, n] of live.acked) {
      const seen = receiver.emits.get(eventId);
      expect(seen, eventId).toBeDefined();
      expect(seen?.room).toBe(ROOM);
      expect(seen?.event).toBe(EVENT);
      expect(seen?.data).toEqual({ n });
      expect(users).toContain(seen?.from);
    }
    // Delivery was genuine and within the limits: signed, at most 100 per request, retries byte for byte.
    expect(receiver.refused).toEqual([]);
    expect(receiver.oversized).toEqual([]);
    expect(receiver.largest).toBeLessThanOrEqual(LIMITS.webhookEventsPerRequest);
    expect(receiver.changedBatches).toEqual([]);
    // One send is one webhook event: a repeat carries the same id, so the customer can drop it.
    expect(receiver.conflicts).toEqual([]);
    // The service logged no error in any run.
    const errors = outputs.flatMap((o) =>
      logLines(o.stdout)
        .filter((l) => l.level >= 50)
        .map((l) => ({ run: o.run, ...l })),
    );
    expect(errors).toEqual([]);
    expect(outputs.map((o) => o.stderr).join('')).toBe('');

    let allDuplicates = 0;
    for (const times of receiver.byId.values()) allDuplicates += times - 1;
    const emitDeliveries = [...receiver.emits.values()].reduce((sum, seen) => sum + seen.times, 0);
    const duplicates = emitDeliveries - receiver.emits.size;
    const received = [...live.acked.keys()].filter((id) => receiver?.emits.has(id)).length;
    const unacknowledged = receiver.emits.size - received;
    const warnings = outputs.flatMap((o) =>
      logLines(o.stdout)
        .filter((l) => l.level === 40 && !l.msg.includes('--allow-private-webhooks'))
        .map((l) => `run ${o.run}: ${l.msg} ${JSON.stringify(l)}`),
    );
    console.log(
      `webhook crash test: ${live.acked.size} acknowledged, ${received} received, ${duplicates} duplicates, ${KILLS} kills` +
        ` (${emitDeliveries} emit deliveries, ${allDuplicates} duplicates of any type, ${receiver.batches.size} batches in ${receiver.requests} requests, largest ${receiver.largest};` +
        ` ${unacknowledged} received without acknowledgement, ${live.lostInFlight} sends lost in flight, ${live.failedStarts} page starts cut;` +
        ` ${Math.round(elapsed / 100) / 10} s)`,
    );
    console.log(
      `kills: ${kills.map((k) => `#${k.run} +${k.afterMs}ms acked ${k.acked} in flight ${k.inFlight} received ${k.received}`).join('; ')}`,
    );
    if (warnings.length > 0) console.log(`service warnings:\n${warnings.join('\n')}`);
  });
});
