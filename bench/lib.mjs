import { spawn } from 'node:child_process';
import autocannon from 'autocannon';

/** Starts a child process and resolves with the first port it reports on stdout. */
export function startChild(command, args, env = {}) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const found = /"port":(\d+)|listening on http:\/\/[^:]+:(\d+)/.exec(buffered);
      if (found) resolve({ child, port: Number(found[1] ?? found[2]) });
    });
    child.on('exit', (code) => reject(new Error(`${command} exited with ${code} before listening`)));
  });
}

export function stopChild(child) {
  return new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}

/** One autocannon run; resolves with requests/s (mean), latency p50/p99 and non-2xx count. */
export function load(options) {
  return new Promise((resolve, reject) => {
    autocannon({ connections: 50, pipelining: 1, ...options }, (error, result) => {
      if (error) reject(error);
      else
        resolve({
          rps: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          non2xx: result.non2xx,
          errors: result.errors,
        });
    });
  });
}
