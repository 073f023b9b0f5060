// npm run bench:join — a reconnect storm, side by side in one run: N pages (BENCH_PAGES, 5,000) each
// connect, present an identity token and join a room with a room token (both HS256, 50 rooms),
// BENCH_CONCURRENCY (200) at a time, against the service, Socket.IO 4 and a bare `ws` server. The
// service checks the tokens with node:crypto's HMAC (jose only for what that path leaves to it); so
// does the raw ws server, the bare minimum doing the same work; Socket.IO checks with jose
// (./join/verify.mjs). Each server runs in its own process; its CPU time (user + system, from
// /proc/<pid>/stat) over the storm, divided by the pages joined, is its CPU per join. The pages run in this process (./fanout/light-client.mjs).
// Env: BENCH_PAGES, BENCH_CONCURRENCY, BENCH_ROUNDS (2: the best round of each counts), BENCH_ONLY,
// BENCH_PROF (a folder: a CPU profile of each server over the storm alone), BENCH_PRESENCE=1.
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Realtime } from '@realtime/node';
import { openLight } from './fanout/light-client.mjs';

const PAGES = Number(process.env.BENCH_PAGES ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const ROOMS = 50;
// Presence makes each join a member event to every page already in the room (the baselines send none):
// off by default, so the three servers do the same work; BENCH_PRESENCE=1 measures it on top.
const PRESENCE = process.env.BENCH_PRESENCE === '1';
const app = {
  key: 'bench',
  secret: 'bench-secret-0123456789',
  name: 'bench',
  webhook: '',
  features: ['history', 'presence'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};

/** One identity and one room token per page, minted before any server starts. */
async function mintTokens() {
  const sdk = new Realtime({ url: 'http://127.0.0.1:1', key: app.key, secret: app.secret });
  const tokens = [];
  for (let i = 0; i < PAGES; i++) {
    const user = `u${i}`;
    const room = `r${i % ROOMS}`;
    tokens.push({
      user,
      room,
      identity: await sdk.identityToken(user, { expiresIn: 3600 }),
      token: await sdk.roomToken(room, { userId: user, presence: PRESENCE, expiresIn: 3600 }),
    });
  }
  await sdk.close();
  return tokens;
}

/** How a page of each system says hello and joins; `joined()` once the server has admitted it. */
const SYSTEMS = {
  service: {
    script: '../fanout/service.mjs',
    path: () => `/service/realtime/socket?site=${app.key}`,
    onOpen(page, t) {
      page.send(JSON.stringify({ t: 'hello', v: 1, identity: t.identity }));
    },
    onText(page, text, t, joined) {
      if (text.startsWith('{"t":"welcome"'))
        page.send(JSON.stringify({ t: 'join', ref: 1, room: t.room, token: t.token }));
      else if (text.startsWith('{"t":"joined"')) joined();
      else if (text.startsWith('{"t":"error"') || text.startsWith('{"t":"refused"')) joined(new Error(text));
    },
  },
  'socket.io': {
    script: 'socketio.mjs',
    path: () => '/socket.io/?EIO=4&transport=websocket',
    onOpen() {},
    onText(page, text, t, joined) {
      if (text.startsWith('0')) page.send(`40${JSON.stringify({ identity: t.identity })}`);
      else if (text.startsWith('40')) page.send(`421${JSON.stringify(['join', t.room, t.token])}`);
      else if (text.startsWith('431')) joined();
      else if (text.startsWith('44')) joined(new Error(text));
      else if (text === '2') page.send('3');
    },
  },
  'raw ws': {
    script: 'raw-ws.mjs',
    path: () => '/',
    onOpen(page, t) {
      page.send(JSON.stringify({ t: 'hello', identity: t.identity }));
    },
    onText(page, text, t, joined) {
      if (text.startsWith('{"t":"welcome"'))
        page.send(JSON.stringify({ t: 'join', ref: 1, room: t.room, token: t.token }));
      else if (text.startsWith('{"t":"joined"')) joined();
    },
  },
};
// The same bare server checking its tokens with jose, as the first figures did (204 µs).
SYSTEMS['raw ws jose'] = { ...SYSTEMS['raw ws'], env: { BENCH_VERIFY: 'jose' } };

const PROFILE = process.env.BENCH_PROF;

function startServer(name, script, env = {}) {
  const child = fork(new URL(`./join/${script}`, import.meta.url), [], {
    // A profile of the storm alone: started and stopped over IPC around it (./join/profile.mjs).
    execArgv: PROFILE ? ['--import', new URL('./join/profile.mjs', import.meta.url).href] : [],
    env: { ...process.env, ...env, BENCH_APP: JSON.stringify(app), BENCH_SYSTEM: name.replace(/\W/g, '') },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise((resolve) => child.once('message', (m) => resolve({ child, port: m.port })));
}

// A failed run must not leave a server behind.
const children = new Set();
process.on('exit', () => {
  for (const child of children) child.kill();
});

/** Sends a server a message and waits for its answer. */
function ask(child, message, answer) {
  return new Promise((resolve) => {
    const onMessage = (m) => {
      if (m !== answer) return;
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send(message);
  });
}

/** CPU time (user + system, µs) a process has used so far, from /proc: its own, not the load generator's. */
const TICK_US = 1e6 / 100;
function cpuUs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

async function storm(name, tokens) {
  const system = SYSTEMS[name];
  const { child, port } = await startServer(name, system.script, system.env);
  const pages = [];
  let next = 0;
  const joinOne = async (t) => {
    let settle;
    const done = new Promise((resolve, reject) => {
      settle = (error) => (error ? reject(error) : resolve());
    });
    const page = await openLight(port, system.path(), (payload, p) => {
      if (process.env.BENCH_DEBUG) console.log(name, payload.toString().slice(0, 200));
      system.onText(p, payload.toString(), t, settle);
    });
    pages.push(page);
    system.onOpen(page, t);
    await done;
  };
  if (PROFILE) await ask(child, 'profile-start', 'profile-started');
  const cpuBefore = cpuUs(child.pid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < tokens.length) await joinOne(tokens[next++]);
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuUs(child.pid) - cpuBefore;
  if (PROFILE) await ask(child, 'profile-stop', 'profile-stopped');
  for (const page of pages) page.close();
  await new Promise((resolve) => {
    child.once('exit', resolve);
    child.send('stop');
  });
  return { joinsPerSecond: tokens.length / elapsed, cpuPerJoin: cpu / tokens.length };
}

const tokens = await mintTokens();
const names = process.env.BENCH_ONLY ? [process.env.BENCH_ONLY] : Object.keys(SYSTEMS);
const results = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const name of names) {
    const r = await storm(name, tokens);
    console.log(
      `  round ${round + 1}  ${name.padEnd(11)} server CPU ${Math.round(r.cpuPerJoin).toString().padStart(4)} µs/join`,
    );
    const best = results[name];
    if (!best || r.cpuPerJoin < best.cpuPerJoin)
      results[name] = { ...r, joinsPerSecond: Math.max(r.joinsPerSecond, best?.joinsPerSecond ?? 0) };
    else best.joinsPerSecond = Math.max(best.joinsPerSecond, r.joinsPerSecond);
  }
}

console.log(
  `bench:join  node ${process.version}, ${cpus().length} cores, ${PAGES} pages (connect + hello/identity + join/room token), ${CONCURRENCY} at a time, ${ROOMS} rooms, best of ${ROUNDS}`,
);
console.log(
  '  token checks: service and raw ws with node:crypto HMAC-SHA256, socket.io and raw ws jose with jose (WebCrypto)',
);
for (const [name, r] of Object.entries(results)) {
  console.log(
    `  ${name.padEnd(11)} ${Math.round(r.joinsPerSecond).toString().padStart(7)} joins/s   server CPU ${Math.round(r.cpuPerJoin).toString().padStart(4)} µs/join`,
  );
}
if (results.service && results['raw ws'])
  console.log(
    `  server CPU per join, service / raw ws:    ${(results.service.cpuPerJoin / results['raw ws'].cpuPerJoin).toFixed(2)}x (goal <= 1.2x)`,
  );
if (results.service && results['raw ws jose'])
  console.log(
    `  server CPU per join, service / raw ws jose: ${(results.service.cpuPerJoin / results['raw ws jose'].cpuPerJoin).toFixed(2)}x (the baseline as the issue measured it)`,
  );
if (results.service && results['socket.io'])
  console.log(
    `  server CPU per join, service / socket.io: ${(results.service.cpuPerJoin / results['socket.io'].cpuPerJoin).toFixed(2)}x`,
  );
