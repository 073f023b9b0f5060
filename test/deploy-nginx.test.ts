import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Realtime } from '@realtime/node';
import { deriveKey, SOCKET_PATH, sign } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { newApp } from '../packages/server/src/index.js';
import { CliProcesses } from '../packages/server/test/cli-process.js';
import { freePort, startRedis, type TestRedis } from '../packages/server/test/redis-server.js';

/**
 * deploy/nginx/realtime.conf, run by Debian's nginx (NGINX_PATH, else /usr/sbin/nginx or `nginx`) in front of
 * two `realtime serve` nodes sharing one redis-server, with a certificate openssl makes here. The
 * file is used as shipped except its upstream servers, listen ports and certificate paths (the
 * compose names and ports 80/443 do not exist here). Pages connect from 127.0.0.x addresses other
 * than nginx's own 127.0.0.1, so the nodes (trusting 127.0.0.1 alone, as the compose file trusts
 * nginx alone) learn each page's address from X-Forwarded-For.
 */

// Debian puts it in /usr/sbin, which a user's PATH may leave out.
const NGINX = process.env.NGINX_PATH ?? (existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx');
const SHIPPED = readFileSync(new URL('../deploy/nginx/realtime.conf', import.meta.url), 'utf8');

const cli = new CliProcesses('realtime-nginx-');
let dir: string;
let redis: TestRedis;
let nginx: ChildProcess | undefined;
let ca: Buffer;
let httpsPort: number;
let httpPort: number;
const nodes: { url: string; output: () => string }[] = [];
const app = newApp({ name: 'deploy' });
const sdk = new Realtime({ url: 'https://127.0.0.1', key: app.key, secret: app.secret });
let syntax: { status: number | null; stderr: string };

/** The shipped file with this machine's upstreams, ports and certificate, in a main config nginx runs without root. */
function render(upstreams: string[]): string {
  let upstreamLines = 0;
  const body = SHIPPED.replace(/^\s*server realtime-\d:4000;\n/gm, () => {
    upstreamLines++;
    return upstreamLines === 1 ? upstreams.map((address) => `    server ${address};\n`).join('') : '';
  })
    .replace('listen 80;', `listen 127.0.0.1:${httpPort};`)
    .replace('listen 443 ssl;', `listen 127.0.0.1:${httpsPort} ssl;`)
    .replace('/etc/nginx/certs/tls.crt', join(dir, 'tls.crt'))
    .replace('/etc/nginx/certs/tls.key', join(dir, 'tls.key'));
  // The compose file's three nodes: a change of the shipped file's shape must fail here, not pass unseen.
  expect(upstreamLines).toBe(3);
  const settings = body.replace(/#.*$/gm, '');
  expect(settings).not.toMatch(/realtime-\d|\/etc\/nginx|listen (80|443)\b/);
  writeFileSync(join(dir, 'realtime.conf'), body);
  const temp = (name: string) => `${name}_temp_path ${join(dir, name)};`;
  return [
    'daemon off;',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} warn;`,
    'events { worker_connections 256; }',
    'http {',
    `  access_log ${join(dir, 'access.log')};`,
    `  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}`,
    `  include ${join(dir, 'realtime.conf')};`,
    '}',
    '',
  ].join('\n');
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One HTTPS request to nginx, signed for the app when `body` is given. */
function viaNginx(method: string, path: string, body?: string): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (body !== undefined) {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const key = deriveKey(app.secret, 'publish');
    headers['X-Service-Site'] = app.key;
    headers['X-Service-Timestamp'] = timestamp;
    headers['X-Service-Signature'] = sign({ key, timestamp, method, path, body: Buffer.from(body) });
    headers['Content-Type'] = 'application/json';
  }
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port: httpsPort, method, path, headers, ca }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Page {
  ws: WebSocket;
  frames: Record<string, unknown>[];
  next(match: (frame: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>>;
}

/** A page from `address` (a 127.0.0.x other than nginx's), through nginx over TLS; or the refusal nginx passed on. */
function openPage(address: string, headers: Record<string, string> = {}): Promise<Page | { refused: Answer }> {
  const options: WebSocket.ClientOptions = { ca, localAddress: address, headers };
  const ws = new WebSocket(`wss://127.0.0.1:${httpsPort}${SOCKET_PATH}?site=${app.key}`, options);
  const frames: Record<string, unknown>[] = [];
  ws.on('message', (data) => frames.push(JSON.parse(data.toString()) as Record<string, unknown>));
  const page: Page = {
    ws,
    frames,
    async next(match, what) {
      const deadline = Date.now() + 5000;
      for (;;) {
        const found = frames.find(match);
        if (found) return found;
        if (Date.now() > deadline || ws.readyState === WebSocket.CLOSED) {
          throw new Error(`no ${what}; got ${JSON.stringify(frames.slice(-5))}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(page));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ refused: { status: res.statusCode ?? 0, headers: res.headers, text } }));
    });
    ws.once('error', reject);
  });
}

async function hello(address: string, user: string): Promise<Page> {
  const page = await openPage(address);
  if ('refused' in page) throw new Error(`refused: ${page.refused.status} ${page.refused.text}`);
  page.ws.send(JSON.stringify({ t: 'hello', v: 1, identity: await sdk.identityToken(user) }));
  await page.next((f) => f.t === 'welcome', 'welcome');
  return page;
}

let ref = 0;
async function joinRoom(page: Page, room: string): Promise<void> {
  const r = ++ref;
  page.ws.send(JSON.stringify({ t: 'join', ref: r, room, token: await sdk.roomToken(room, { send: ['msg'] }) }));
  expect(await page.next((f) => f.ref === r, `joined ${room}`)).toMatchObject({ t: 'joined' });
}

/** realtime_pages_open of a node, scraped directly (nginx does not pass /metrics). */
async function pagesOpen(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Number(/^realtime_pages_open (\d+)/m.exec(text)?.[1]);
}

const pages: Page[] = [];
const closeAll = () => {
  for (const page of pages.splice(0)) page.ws.terminate();
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'realtime-nginx-conf-'));
  for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, name));
  const cert = spawnSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost'],
      ...[
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        join(dir, 'tls.key'),
        '-out',
        join(dir, 'tls.crt'),
      ],
    ],
    { encoding: 'utf8' },
  );
  expect(cert.status, cert.stderr).toBe(0);
  ca = readFileSync(join(dir, 'tls.crt'));
  redis = await startRedis();
  const config = cli.writeConfig({
    apps: [{ key: app.key, secret: app.secret }],
    limits: { trustProxy: ['127.0.0.1'], maxPagesPerAddress: 1 },
  });
  for (let i = 0; i < 2; i++) {
    const run = cli.start(['serve', '--redis', redis.url, '--port', '0', '--config', config]);
    let output = '';
    run.child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    nodes.push({ url: await run.url, output: () => output });
  }
  httpsPort = await freePort();
  httpPort = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, render(nodes.map((node) => new URL(node.url).host)));
  const args = ['-p', `${dir}/`, '-c', conf, '-e', join(dir, 'error.log')];
  syntax = spawnSync(NGINX, ['-t', ...args], { encoding: 'utf8' });
  nginx = spawn(NGINX, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = await viaNginx('GET', '/service/realtime/health').catch(() => undefined);
    if (answer?.status === 200) break;
    if (Date.now() > deadline || nginx.exitCode !== null) {
      throw new Error(`nginx does not answer: ${readFileSync(join(dir, 'error.log'), 'utf8')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});

afterAll(async () => {
  closeAll();
  if (nginx && nginx.exitCode === null) {
    const ended = new Promise((resolve) => nginx?.once('exit', resolve));
    nginx.kill('SIGQUIT');
    await ended;
  }
  await sdk.close();
  await cli.cleanup();
  await redis?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('deploy/nginx/realtime.conf with Debian’s nginx, two nodes, one Redis', () => {
  it('passes nginx -t', () => {
    expect(syntax.stderr).toContain('test is successful');
    expect(syntax.status).toBe(0);
  });

  it('sends plain HTTP to HTTPS, serves the API over TLS, and keeps /metrics in', async () => {
    const redirect = await new Promise<Answer>((resolve, reject) =>
      httpRequest({ host: '127.0.0.1', port: httpPort, path: '/service/realtime/health' }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '' }));
      })
        .on('error', reject)
        .end(),
    );
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toMatch(/^https:\/\/127\.0\.0\.1(:\d+)?\/service\/realtime\/health$/);
    const ready = await viaNginx('GET', '/service/realtime/ready');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ ok: true });
    expect((await viaNginx('GET', '/metrics')).status).toBe(404);
  });

  it('carries pages on both nodes over wss: an emit and a page send reach pages of the other node through Redis', async () => {
    const alice = await hello('127.0.0.2', 'alice');
    const bob = await hello('127.0.0.3', 'bob');
    pages.push(alice, bob);
    // least_conn: the second page goes to the node without one.
    expect(await Promise.all(nodes.map((node) => pagesOpen(node.url)))).toEqual([1, 1]);
    await joinRoom(alice, 'lobby');
    await joinRoom(bob, 'lobby');
    const emitted = await viaNginx(
      'POST',
      '/service/realtime/emit',
      JSON.stringify({ rooms: ['lobby'], event: 'news', data: 1 }),
    );
    expect(emitted.status, emitted.text).toBe(200);
    for (const page of [alice, bob]) {
      expect(await page.next((f) => f.t === 'event' && f.event === 'news', 'news')).toMatchObject({
        room: 'lobby',
        data: 1,
      });
    }
    alice.ws.send(JSON.stringify({ t: 'send', ref: 900, room: 'lobby', event: 'msg', data: { text: 'hi' } }));
    expect(await bob.next((f) => f.t === 'event' && f.event === 'msg', 'msg')).toMatchObject({
      from: 'alice',
      data: { text: 'hi' },
    });
    closeAll();
  });

  it('X-Forwarded-For reaches the nodes: pages are counted by their own address, the right-most one nginx appended', async () => {
    // One page per address per node (maxPagesPerAddress 1): four addresses all get in, though every
    // socket the nodes see comes from nginx.
    for (const address of ['127.0.0.10', '127.0.0.11', '127.0.0.12', '127.0.0.13']) {
      const page = await openPage(address);
      expect('refused' in page ? page.refused : 'open').toBe('open');
      if (!('refused' in page)) pages.push(page);
    }
    // Three pages from one address on two nodes: one node gets two and refuses one, naming that
    // address, not the X-Forwarded-For the page wrote itself (nginx appends the real one to it).
    const answers = [];
    for (const spoof of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) {
      const page = await openPage('127.0.0.20', { 'X-Forwarded-For': spoof });
      if ('refused' in page) answers.push(page.refused);
      else pages.push(page);
    }
    expect(answers.length).toBeGreaterThanOrEqual(1);
    for (const refused of answers) {
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.text)).toMatchObject({
        error: 'unavailable',
        message: 'too many pages from this address',
      });
    }
    // The refusal's log line reaches this process through the node's stdout, maybe after its answer.
    const logs = () => nodes.map((node) => node.output()).join('');
    for (let tries = 0; tries < 200 && !logs().includes('127.0.0.20 has 1 pages open'); tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(logs()).toContain('127.0.0.20 has 1 pages open');
    expect(logs()).not.toMatch(/198\.51\.100\.\d has 1 pages open/);
    closeAll();
  });
});
