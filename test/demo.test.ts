import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Realtime } from '@realtime/node';
import { hashDashboardPassword } from '@realtime/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openRawPage } from '../packages/server/test/pages.js';
import { startReceiver } from '../packages/server/test/receiver.js';

/**
 * `npm start` (examples/chat/start.mjs) spawned for real from the build, in a fresh data folder:
 * the development app is shown on stderr, the demo's token server follows a secret rotated by the
 * CLI while it runs, webhooks may go to a local address, and the dashboard is on with the password
 * it prints (or the hash REALTIME_DASHBOARD_PASSWORD_HASH gives).
 */

const START = fileURLToPath(new URL('../examples/chat/start.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../packages/server/dist/cli.js', import.meta.url));

interface Tokens {
  identity: string;
  room: string;
}

let dir: string;
let data: string;
let child: ChildProcess;
let exited: Promise<number | null>;
let stdout = '';
let stderr = '';
let serviceUrl: string;
let demoUrl: string;
let key: string;
let secret: string;
/** The dashboard's address and password as npm start printed them. */
let dashboard = { address: '', password: '' };

/** Output so far, until `test` holds; fails when the demo ends first or after 20 s. */
function waitForOutput(test: () => boolean, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`timed out waiting for ${what}\n${stdout}\n${stderr}`)), 20_000);
    const check = () => {
      if (test()) done();
    };
    const ended = () => done(new Error(`the demo ended before ${what}\n${stdout}\n${stderr}`));
    function done(error?: Error) {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', ended);
      if (error) reject(error);
      else resolve();
    }
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', ended);
    check();
  });
}

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [CLI, ...args, '--data', data], { cwd: dir, encoding: 'utf8' });
}

async function tokensFor(user: string): Promise<Tokens> {
  const answer = await fetch(`${demoUrl}/token?user=${user}`);
  expect(answer.status).toBe(200);
  return (await answer.json()) as Tokens;
}

/** A page of the demo: says hello with the identity, joins the lobby, sends a chat line; what it got back. */
async function chat(tokens: Tokens): Promise<Record<string, unknown>> {
  const page = await openRawPage(serviceUrl, key);
  try {
    page.send({ t: 'hello', v: 1, identity: tokens.identity });
    // A refused identity closes the socket instead of a welcome.
    const welcome = await page.next((f) => f.t === 'welcome', 'welcome').catch(() => undefined);
    if (!welcome) return { t: 'closed', code: (await page.closed).code };
    page.send({ t: 'join', ref: 1, room: 'lobby', token: tokens.room });
    // Within a second of a rotation the service may still have read the identity with the old secret
    // and the room token with the new one: the refusal comes back as it is.
    const joined = await page.next((f) => f.ref === 1 && (f.t === 'joined' || f.t === 'error'), 'joined');
    if (joined.t === 'error') return joined;
    page.send({ t: 'send', ref: 2, room: 'lobby', event: 'chat', data: { text: 'hi' } });
    return await page.next((f) => f.ref === 2, 'the answer to send');
  } finally {
    await page.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'realtime-demo-'));
  data = join(dir, 'data');
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
  child = spawn(process.execPath, [START], {
    cwd: dir,
    env: { ...env, PORT: '0', DEMO_PORT: '0', DATA: data },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    stdout += text;
  });
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
  });
  // Two pipes: either may be read first.
  await waitForOutput(() => /Chat demo: open (\S+) /.test(stderr) && stdout.includes('listening on'), 'the demo line');
  serviceUrl = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)?.[1] ?? '';
  demoUrl = /Chat demo: open (\S+) /.exec(stderr)?.[1] ?? '';
  key = /^ {2}key: +(\S+)$/m.exec(stderr)?.[1] ?? '';
  secret = /^ {2}secret: +(\S+)$/m.exec(stderr)?.[1] ?? '';
});

afterAll(async () => {
  if (child.exitCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('npm start (the chat demo)', () => {
  it('shows the development app on stderr and says it is a development setup; stdout is JSON log lines', () => {
    expect(serviceUrl).not.toBe('');
    expect(demoUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(key).not.toBe('');
    expect(secret.length).toBeGreaterThanOrEqual(32);
    expect(stderr).toMatch(/development/i);
    expect(stderr).toContain('--allow-private-webhooks');
    for (const line of stdout.split('\n').filter((l) => l !== '')) expect(() => JSON.parse(line), line).not.toThrow();
    expect(stdout).not.toContain(secret);
    // The service runs with private webhooks allowed, and its log says so loudly.
    expect(stdout).toMatch(/"level":40,[^\n]*allow-private-webhooks/);
  });

  it('turns the dashboard on and prints its address and a random password; signing in with it works', async () => {
    const shown = /^Dashboard: (http:\/\/127\.0\.0\.1:\d+\/dashboard\/) \(password: (\S+)\)$/m.exec(stderr);
    expect(shown, stderr).not.toBeNull();
    const [, address = '', password = ''] = shown ?? [];
    expect(address).toBe(`${serviceUrl}/dashboard/`);
    expect(password.length).toBeGreaterThanOrEqual(16);
    dashboard = { address, password };
    expect(stdout).not.toContain(password);

    const before = await fetch(new URL('api/session', address));
    expect(before.status).toBe(401);
    expect(await before.json()).toMatchObject({ ok: false, error: 'signed_out' });
    const signIn = await fetch(new URL('api/session', address), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password }),
    });
    expect(signIn.status).toBe(200);
    expect(await signIn.json()).toMatchObject({ ok: true, csrf: expect.any(String) });
    expect(signIn.headers.get('set-cookie')).toMatch(/^rt_dashboard=/);
  });

  it('the demo refuses names it does not take, saying why; it serves its favicon', async () => {
    const refusal = async (user: string) => {
      const answer = await fetch(`${demoUrl}/token?user=${encodeURIComponent(user)}`);
      expect(answer.status, user).toBe(400);
      return ((await answer.json()) as { error: string }).error;
    };
    expect(await refusal('')).toBe('Pick a name.');
    expect(await refusal('   ')).toBe('Pick a name.');
    expect(await refusal('x'.repeat(41))).toBe('A name is at most 40 characters.');
    expect(await refusal('<b>')).toMatch(/letters, digits/);
    expect(await refusal('Server')).toMatch(/kept for the demo/);
    expect((await fetch(`${demoUrl}/token?user=${encodeURIComponent('Zoë 2')}`)).status).toBe(200);
    const icon = await fetch(`${demoUrl}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toMatch(/^<svg /);
  });

  it('an address no URL can be made of is refused 400, and the demo keeps serving', async () => {
    const { port } = new URL(demoUrl);
    const status = await new Promise<number | undefined>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '//[' }, (res) => {
        res.resume();
        resolve(res.statusCode);
      })
        .on('error', reject)
        .end();
    });
    expect(status).toBe(400);
    expect((await fetch(`${demoUrl}/favicon.svg`)).status).toBe(200);
  });

  it('the CLI shows the secret again', () => {
    const shown = cli('apps', 'show', key, '--secret');
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^secret: +${secret}$`, 'm'));
    const hidden = cli('apps', 'show', key);
    expect(hidden.stdout).not.toContain(secret);
  });

  it('a secret rotated while the demo runs: the demo mints working tokens with the new one', async () => {
    const before = await tokensFor('alice');
    expect(await chat(before)).toMatchObject({ t: 'sent', ref: 2 });

    const rotated = cli('apps', 'rotate-secret', key);
    expect(rotated.status, rotated.stderr).toBe(0);
    const fresh = /^secret: (\S+)$/m.exec(rotated.stdout)?.[1] ?? '';
    expect(fresh).not.toBe(secret);

    // The service keeps an app for up to a second: wait until it refuses what the old secret signed.
    let refused: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      refused = await chat(before);
      if (refused.t === 'closed') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(refused).toEqual({ t: 'closed', code: 4002 });

    const after = await tokensFor('bob');
    expect(after.identity).not.toBe(before.identity);
    expect(await chat(after)).toMatchObject({ t: 'sent', ref: 2 });
    secret = fresh;
  });

  it('a secret rotated on the dashboard: the demo mints working tokens with the new one', async () => {
    const before = await tokensFor('carol');
    expect(await chat(before)).toMatchObject({ t: 'sent', ref: 2 });

    const signIn = await fetch(new URL('api/session', dashboard.address), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ password: dashboard.password }),
    });
    expect(signIn.status).toBe(200);
    const { csrf } = (await signIn.json()) as { csrf: string };
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const rotated = await fetch(new URL(`api/apps/${key}/secret`, dashboard.address), {
      method: 'POST',
      headers: { cookie, 'x-csrf-token': csrf },
    });
    expect(rotated.status).toBe(200);
    const fresh = ((await rotated.json()) as { secret: string }).secret;
    expect(fresh).not.toBe(secret);

    let refused: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) {
      refused = await chat(before);
      if (refused.t === 'closed') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(refused).toEqual({ t: 'closed', code: 4002 });
    expect(await chat(await tokensFor('dave'))).toMatchObject({ t: 'sent', ref: 2 });
    secret = fresh;
  });

  it('delivers webhooks to a local address set with set-webhook --allow-private-webhooks', async () => {
    const receiver = await startReceiver({ key, secret });
    const realtime = new Realtime({ url: serviceUrl, key, secret });
    try {
      const set = cli('apps', 'set-webhook', key, receiver.url, '--allow-private-webhooks');
      expect(set.status, set.stderr).toBe(0);
      // The new address reaches the service within a second (its app cache): no_webhook until then.
      let answer: unknown;
      for (let i = 0; i < 100; i++) {
        answer = await realtime.webhooks.test().catch((error: Error) => error.message);
        if (typeof answer === 'object') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(answer).toEqual({ delivered: true, status: 204 });
      expect(receiver.events('webhook.test').length).toBeGreaterThanOrEqual(1);
    } finally {
      await realtime.close();
      await receiver.close();
    }
  });

  it('mints call tokens the service takes: a call from one member of the lobby rings the other', async () => {
    const hello = async (user: string) => {
      const page = await openRawPage(serviceUrl, key);
      page.send({ t: 'hello', v: 1, identity: (await tokensFor(user)).identity });
      await page.next((f) => f.t === 'welcome', 'welcome');
      return page;
    };
    const ann = await hello('ann');
    const ben = await hello('ben');
    try {
      const refused = await fetch(`${demoUrl}/call-token?user=ann&to=ann`);
      expect(refused.status).toBe(400);
      const answer = await fetch(`${demoUrl}/call-token?user=ann&to=ben`);
      expect(answer.status).toBe(200);
      const { token } = (await answer.json()) as { token: string };
      ann.send({ t: 'call.invite', ref: 1, to: 'ben', token });
      const placed = await ann.next((f) => f.ref === 1, 'call.placed');
      expect(placed).toMatchObject({ t: 'call.placed' });
      expect(await ben.next((f) => f.t === 'call.ring', 'ring')).toMatchObject({
        call: placed.call,
        from: 'ann',
        media: ['audio', 'video'],
      });
      ann.send({ t: 'call.hangup', call: placed.call });
      expect(await ben.next((f) => f.t === 'call.ended', 'ended')).toMatchObject({ reason: 'cancelled' });
    } finally {
      await ann.close();
      await ben.close();
    }
  });

  it('mints stream grants the service takes: a member presents the lobby stream, another watches it', async () => {
    const hello = async (user: string) => {
      const page = await openRawPage(serviceUrl, key);
      page.send({ t: 'hello', v: 1, identity: (await tokensFor(user)).identity });
      await page.next((f) => f.t === 'welcome', 'welcome');
      return page;
    };
    const grantOf = async (user: string, role: string) => {
      const answer = await fetch(`${demoUrl}/stream-grant?user=${user}&role=${role}`);
      expect(answer.status).toBe(200);
      return ((await answer.json()) as { grant: string }).grant;
    };
    expect((await fetch(`${demoUrl}/stream-grant?user=ann&role=boss`)).status).toBe(400);
    const ann = await hello('ann');
    const ben = await hello('ben');
    try {
      ann.send({ t: 'stream.present', ref: 1, stream: 'lobby-live', grant: await grantOf('ann', 'presenter') });
      expect(await ann.next((f) => f.ref === 1, 'presenting')).toMatchObject({ t: 'stream.presenting' });
      ben.send({ t: 'stream.watch', ref: 1, stream: 'lobby-live', grant: await grantOf('ben', 'viewer') });
      expect(await ben.next((f) => f.ref === 1, 'watching')).toMatchObject({ t: 'stream.watching', live: false });
    } finally {
      await ann.close();
      await ben.close();
    }
  });

  it('stops on SIGTERM with exit 0', async () => {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('npm start with REALTIME_DASHBOARD_PASSWORD_HASH', () => {
  it('uses that hash: prints the address without a password, and that password signs in', async () => {
    const own = mkdtempSync(join(tmpdir(), 'realtime-demo-hash-'));
    const password = 'correct horse battery staple';
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('REALTIME_')));
    const started = spawn(process.execPath, [START], {
      cwd: own,
      env: {
        ...env,
        PORT: '0',
        DEMO_PORT: '0',
        DATA: join(own, 'data'),
        REALTIME_DASHBOARD_PASSWORD_HASH: await hashDashboardPassword(password),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const ended = new Promise<number | null>((resolve) => started.once('exit', (code) => resolve(code)));
    try {
      let text = '';
      started.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk;
      });
      const deadline = Date.now() + 20_000;
      while (!/^Dashboard: .*$/m.test(text) && started.exitCode === null && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const line = /^Dashboard: (.*)$/m.exec(text)?.[1] ?? '';
      expect(line, text).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dashboard\/$/);
      const signIn = await fetch(new URL('api/session', line), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ password }),
      });
      expect(signIn.status).toBe(200);
    } finally {
      started.kill('SIGTERM');
      expect(await ended).toBe(0);
      rmSync(own, { recursive: true, force: true });
    }
  });
});
