// npm run bench:api — signed emits per second against the real service, side by side in one run
// with a bare node:http server that only checks an HMAC-SHA256 of the body. Prints both and the ratio.
// Also the CPU time each process used per request (from /proc): steadier than req/s on a busy machine.
// Env: BENCH_SECONDS (default 10 per round), BENCH_ROUNDS (default 2), BENCH_CONNECTIONS (default 50).

import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveKey, sign } from '@realtime/protocol';
import { load, startChild, stopChild } from './lib.mjs';

const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const root = new URL('..', import.meta.url).pathname;

const app = {
  key: 'bench',
  secret: 'bench-secret-0123456789',
  features: ['history'],
  rateLimit: { perSecond: 1e9, burst: 1e9 },
};
const dir = mkdtempSync(join(tmpdir(), 'realtime-bench-'));
writeFileSync(join(dir, 'config.json'), JSON.stringify({ apps: [app] }));

const body = JSON.stringify({ rooms: ['lobby'], event: 'hello', data: { text: 'hi', n: 42 } });
const historyBody = JSON.stringify({
  rooms: ['lobby'],
  event: 'hello',
  data: { text: 'hi', n: 42 },
  history: { lobby: [100, 1] },
});
const path = '/service/realtime/emit';

function signedHeaders(text) {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = sign({ key: deriveKey(app.secret, 'publish'), timestamp, method: 'POST', path, body: text });
  return {
    'content-type': 'application/json',
    'x-service-site': app.key,
    'x-service-timestamp': timestamp,
    'x-service-signature': signature,
  };
}

const service = await startChild(process.execPath, [
  join(root, 'packages/server/dist/cli.js'),
  'serve',
  '--port',
  '0',
  '--data',
  join(dir, 'data'),
  '--config',
  join(dir, 'config.json'),
  '--log-level',
  'info',
]);
const bare = await startChild(process.execPath, [join(root, 'bench/bare-server.mjs')], { BARE_KEY: 'bench-key' });
const bareSignature = createHmac('sha256', 'bench-key').update(body).digest('hex');

const targets = {
  bare: () => ({
    url: `http://127.0.0.1:${bare.port}${path}`,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-service-signature': bareSignature },
  }),
  service: () => ({
    url: `http://127.0.0.1:${service.port}${path}`,
    method: 'POST',
    body,
    headers: signedHeaders(body),
  }),
  'service+history': () => ({
    url: `http://127.0.0.1:${service.port}${path}`,
    method: 'POST',
    body: historyBody,
    headers: signedHeaders(historyBody),
  }),
};

/** CPU time (user + system, ms) a child has used so far, from /proc: a figure the machine's noise moves less than req/s. */
function cpuMs(child) {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const processOf = { bare: () => bare.child, service: () => service.child, 'service+history': () => service.child };

const results = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
try {
  for (const name of Object.keys(targets)) await load({ ...targets[name](), duration: 2, connections }); // warm-up
  for (let round = 0; round < rounds; round++) {
    for (const name of Object.keys(targets)) {
      const before = cpuMs(processOf[name]());
      const r = await load({ ...targets[name](), duration: seconds, connections });
      r.cpuUs = ((cpuMs(processOf[name]()) - before) * 1000) / (r.rps * seconds);
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
      results[name].push(r);
    }
  }
} finally {
  await stopChild(service.child);
  await stopChild(bare.child);
  rmSync(dir, { recursive: true, force: true });
}

const mean = (list, key) => list.reduce((sum, r) => sum + r[key], 0) / list.length;
console.log(
  `bench:api  node ${process.version}, ${cpus().length} cores, ${connections} connections, ${rounds} x ${seconds} s per target`,
);
for (const [name, list] of Object.entries(results)) {
  console.log(
    `  ${name.padEnd(16)} ${Math.round(mean(list, 'rps')).toString().padStart(7)} req/s   p50 ${mean(list, 'p50').toFixed(1)} ms   p99 ${mean(list, 'p99').toFixed(1)} ms   ${mean(list, 'cpuUs').toFixed(1)} µs CPU/req`,
  );
}
const ratio = mean(results.service, 'rps') / mean(results.bare, 'rps');
console.log(`  ratio service / bare HMAC server: ${ratio.toFixed(2)} (goal >= 0.80)`);
const cpuRatio = mean(results.bare, 'cpuUs') / mean(results.service, 'cpuUs');
console.log(`  CPU per request, bare / service: ${cpuRatio.toFixed(2)}`);
