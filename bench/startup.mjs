// Start time and RSS of `realtime serve` and of importing @realtime/server (docs/benchmarks.md).
// Usage: node bench/startup.mjs [runs]   (needs npm run build)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const runs = Number(process.argv[2] ?? 5);
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

function once(args, ready) {
  return new Promise((resolve, reject) => {
    const dir = mkdtempSync(join(tmpdir(), 'rt-start-'));
    const started = performance.now();
    const child = spawn(process.execPath, args(dir), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let done = false;
    const look = (chunk) => {
      out += chunk;
      if (!ready.test(out)) return;
      done = true;
      const ms = performance.now() - started;
      const mb = rssMb(child.pid);
      child.kill('SIGKILL');
      child.once('exit', () => {
        rmSync(dir, { recursive: true, force: true });
        resolve({ ms, mb });
      });
      child.stdout.off('data', look);
      child.stderr.off('data', look);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.once('exit', (code) => done || reject(new Error(`exited ${code} before ready: ${out}`)));
  });
}

const stat = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0].toFixed(0)} median ${s[Math.floor(s.length / 2)].toFixed(0)}`;
};

const cases = {
  import: [
    () => [
      '-e',
      "await import('./packages/server/dist/index.js'); console.log('imported'); setInterval(() => {}, 1000)",
      '--input-type=module',
    ],
    /imported/,
  ],
  serve: [(dir) => ['packages/server/dist/cli.js', 'serve', '--port', '0', '--data', dir], /listening|http:\/\//i],
};
for (const [name, [args, ready]] of Object.entries(cases)) {
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await once(args, ready));
  console.log(`${name}: ms ${stat(results.map((r) => r.ms))}; RSS MB ${stat(results.map((r) => r.mb))}`);
}
