import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `realtime serve` spawned from its build, configured by file: the metrics token and the shutdown
 * delay, scraped and probed over real HTTP while SIGTERM drains it.
 */

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const TOKEN = 'ops-cli-metrics-token-0123';

function get(url: string, path: string, headers: Record<string, string> = {}) {
  const target = new URL(url);
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const r = httpRequest({ host: target.hostname, port: target.port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    r.on('error', reject);
    r.end();
  });
}

describe('realtime serve: metrics token and a SIGTERM drain, from the config file', () => {
  let dir: string;
  let child: ChildProcess;
  let url: string;
  let exited: Promise<number | null>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'realtime-ops-'));
    const config = {
      apps: [{ key: 'ops', secret: 'ops-secret-0123456789' }],
      metrics: { token: TOKEN },
      shutdownDelayMs: 1500,
    };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
    child = spawn(
      process.execPath,
      [CLI, 'serve', '--port', '0', '--data', join(dir, 'data'), '--config', join(dir, 'config.json')],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let out = '';
    url = await new Promise<string>((resolve, reject) => {
      child.stdout?.setEncoding('utf8').on('data', (text: string) => {
        out += text;
        const found = /listening on (http:\/\/[^"\s]+)/.exec(out);
        if (found?.[1]) resolve(found[1]);
      });
      child.once('exit', () => reject(new Error(`serve ended early: ${out}`)));
    });
  });
  afterAll(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('scrapes /metrics with the token only', async () => {
    expect((await get(url, '/metrics')).status).toBe(401);
    const scraped = await get(url, '/metrics', { authorization: `Bearer ${TOKEN}` });
    expect(scraped.status).toBe(200);
    expect(scraped.text).toMatch(/^realtime_pages_open 0$/m);
  });

  it('on SIGTERM, /ready answers 503 for the configured delay while /health stays 200, then the process exits 0', async () => {
    expect((await get(url, '/service/realtime/ready')).status).toBe(200);
    child.kill('SIGTERM');
    // The signal lands on its own time: poll until the drain began (well within the 1.5 s delay).
    let ready = await get(url, '/service/realtime/ready');
    const deadline = Date.now() + 1000;
    while (ready.status === 200 && Date.now() < deadline) ready = await get(url, '/service/realtime/ready');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text)).toMatchObject({ ok: false, error: 'unavailable' });
    expect((await get(url, '/service/realtime/health')).status).toBe(200);
    expect(await exited).toBe(0);
  });
});
