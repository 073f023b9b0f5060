// Part 1 of bench:calls: call.invite sent by the caller's page -> call.ring on the callee's page,
// over raw WebSocket pages, against the service and, in the same run, a bare `ws` relay
// (relay.mjs). Each call is then hung up (the caller cancels it while it rings) and both pages
// get call.ended before the pair places its next call. Servers run in processes of their own.
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Realtime } from '@realtime/node';
import WebSocket from 'ws';

const app = {
  key: 'bench',
  secret: 'bench-secret-0123456789',
  name: 'bench',
  webhook: '',
  features: ['calls'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};

function startChild(script) {
  const child = fork(new URL(script, import.meta.url), [], {
    env: { ...process.env, BENCH_APP: JSON.stringify(app) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({ child, port: m.port }));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before listening`)));
  });
}

/** The server process's CPU time so far (µs). */
function cpuOf(child) {
  return new Promise((resolve) => {
    const onMessage = (m) => {
      if (typeof m?.cpu !== 'number') return;
      child.off('message', onMessage);
      resolve(m.cpu);
    };
    child.on('message', onMessage);
    child.send('cpu');
  });
}

/** A page on a raw WebSocket: `expect(match)` resolves with the first matching frame after it is called. */
function openSocket(url) {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const waiters = new Set();
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.t === 'ping') ws.send('{"t":"pong"}');
    for (const waiter of waiters) {
      if (waiter.match(frame)) {
        waiters.delete(waiter);
        clearTimeout(waiter.timer);
        waiter.resolve(frame);
      }
    }
  });
  const page = {
    send: (frame) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
    expect(match, what) {
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve };
        waiter.timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out waiting for ${what}`));
        }, 10_000);
        waiters.add(waiter);
      });
    },
    close: () => ws.close(1000),
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(page));
    ws.once('error', reject);
  });
}

/** How each system is reached: open a page of `user`, and the invite frame of a pair. */
const SYSTEMS = {
  service: {
    script: './service.mjs',
    async prepare(port, pairs) {
      const sdk = new Realtime({ url: `http://127.0.0.1:${port}`, key: app.key, secret: app.secret });
      this.port = port;
      this.identities = new Map();
      this.tokens = [];
      for (let i = 0; i < pairs; i++) {
        for (const user of [`caller${i}`, `callee${i}`]) this.identities.set(user, await sdk.identityToken(user));
        this.tokens.push(await sdk.callToken(`caller${i}`, { to: `callee${i}`, expiresIn: 3600 }));
      }
      await sdk.close();
    },
    async open(user) {
      const page = await openSocket(`ws://127.0.0.1:${this.port}/service/realtime/socket?site=${app.key}`);
      const welcome = page.expect((f) => f.t === 'welcome' || f.t === 'error', 'welcome');
      page.send({ t: 'hello', v: 1, identity: this.identities.get(user) });
      if ((await welcome).t !== 'welcome') throw new Error(`hello refused for ${user}`);
      return page;
    },
    invite(pair, ref) {
      return JSON.stringify({ t: 'call.invite', ref, to: `callee${pair}`, token: this.tokens[pair] });
    },
  },
  'raw ws': {
    script: './relay.mjs',
    prepare(port) {
      this.port = port;
    },
    open(user) {
      return openSocket(`ws://127.0.0.1:${this.port}/?user=${user}`);
    },
    invite(pair, ref) {
      return JSON.stringify({ t: 'call.invite', ref, to: `callee${pair}` });
    },
  },
};

let ref = 0;
/** One call: invite -> ring (timed), then the caller hangs up and both pages see it end. */
async function oneCall(system, pair, caller, callee) {
  const r = ++ref;
  const ring = callee.expect((f) => f.t === 'call.ring', 'call.ring');
  const placed = caller.expect((f) => f.ref === r, 'call.placed');
  const started = performance.now();
  caller.send(system.invite(pair, r));
  const rung = await ring;
  const took = performance.now() - started;
  const answer = await placed;
  if (answer.t !== 'call.placed' || rung.call !== answer.call)
    throw new Error(`invite answered ${JSON.stringify(answer)}`);
  const ends = [caller, callee].map((p) =>
    p.expect((f) => f.t === 'call.ended' && f.call === answer.call, 'call.ended'),
  );
  caller.send({ t: 'call.hangup', call: answer.call });
  await Promise.all(ends);
  return took;
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

/** `calls` calls over `concurrency` pairs at once (each pair one call at a time), after a warm-up. */
async function measure(system, child, pairs, calls, concurrency) {
  const warmup = async (pair) => {
    for (let i = 0; i < 20; i++) await oneCall(system, pair, pairs[pair].caller, pairs[pair].callee);
  };
  await Promise.all(Array.from({ length: concurrency }, (_, pair) => warmup(pair)));
  const times = [];
  let left = calls;
  const cpuBefore = await cpuOf(child);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, pair) => {
      while (left > 0) {
        left--;
        times.push(await oneCall(system, pair, pairs[pair].caller, pairs[pair].callee));
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = (await cpuOf(child)) - cpuBefore;
  times.sort((a, b) => a - b);
  return {
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    callsPerSecond: calls / seconds,
    cpuPerCall: cpu / calls,
  };
}

export async function signalling({ calls, concurrencies, log }) {
  const most = Math.max(...concurrencies);
  const rows = [];
  for (const [name, system] of Object.entries(SYSTEMS)) {
    const { child, port } = await startChild(system.script);
    try {
      await system.prepare(port, most);
      const pairs = [];
      for (let i = 0; i < most; i++) {
        pairs.push({ caller: await system.open(`caller${i}`), callee: await system.open(`callee${i}`) });
      }
      for (const concurrency of concurrencies) {
        const row = { system: name, concurrency, ...(await measure(system, child, pairs, calls, concurrency)) };
        rows.push(row);
        log(row);
      }
      for (const { caller, callee } of pairs) {
        caller.close();
        callee.close();
      }
    } finally {
      await new Promise((resolve) => {
        child.once('exit', resolve);
        child.send('stop');
      });
    }
  }
  return rows;
}
