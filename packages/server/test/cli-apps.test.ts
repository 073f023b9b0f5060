import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import {
  client,
  cliLifecycle,
  emit,
  eventually,
  expectOneLine,
  run,
  SECRET_A,
  serve,
  tempDir,
  writeConfig,
} from './cli-harness.js';
import { API, send } from './helpers.js';
import { startReceiver } from './receiver.js';

cliLifecycle();

describe('apps commands', () => {
  it('create, list, rotate-secret on a running server, set-webhook', async () => {
    const data = tempDir();
    const created = await run([
      'apps',
      'create',
      '--name',
      'Shop',
      '--features',
      'ask,history',
      '--json',
      '--data',
      data,
    ]);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout) as App;
    expect(app).toMatchObject({ name: 'Shop', features: ['ask', 'history'], webhook: '' });
    expect(app.key).toMatch(/^[A-Za-z0-9._-]{1,64}$/);
    expect(app.secret.length).toBeGreaterThanOrEqual(32);

    const list = async () => {
      const exit = await run(['apps', 'list', '--json', '--data', data]);
      expect(exit.code, exit.stderr).toBe(0);
      return exit;
    };
    const listed = await list();
    expect(listed.stdout).not.toContain(app.secret);
    const apps = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(apps).toEqual([expect.objectContaining({ key: app.key, name: 'Shop', features: ['ask', 'history'] })]);
    expect(apps[0]).not.toHaveProperty('secret');

    // The same key twice is refused.
    expectOneLine(await run(['apps', 'create', '--key', app.key, '--data', data]), 2, 'exists already');

    const server = await serve(['--data', data]);
    expect((await emit(server.url, app.key, app.secret)).json).toEqual({ ok: true, ids: {} });
    const onlineAnswer = await send(client(server.url, app.key, app.secret), { path: `${API}/online?ids=u1` });
    expect(onlineAnswer.status).toBe(403);
    expect(onlineAnswer.json.error).toBe('not_included');

    const rotated = await run(['apps', 'rotate-secret', app.key, '--data', data]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const secret = /^secret: (\S+)\n$/.exec(rotated.stdout)?.[1] as string;
    expect(secret).toBeDefined();
    expect(secret).not.toBe(app.secret);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    const fresh = await eventually(() => emit(server.url, app.key, secret), 200);
    expect(fresh.json).toEqual({ ok: true, ids: {} });
    const old = await eventually(() => emit(server.url, app.key, app.secret), 401);
    expect(old.status).toBe(401);
    expect(old.json.error).toBe('bad_signature');

    const set = await run(['apps', 'set-webhook', app.key, 'https://example.com/hook', '--data', data]);
    expect(set.code, set.stderr).toBe(0);
    expect((JSON.parse((await list()).stdout) as App[])[0]?.webhook).toBe('https://example.com/hook');
    expectOneLine(
      await run(['apps', 'set-webhook', app.key, 'http://example.com/hook', '--data', data]),
      2,
      'https://',
    );
    expect((JSON.parse((await list()).stdout) as App[])[0]?.webhook).toBe('https://example.com/hook');
    const cleared = await run(['apps', 'set-webhook', app.key, '', '--data', data]);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect((JSON.parse((await list()).stdout) as App[])[0]?.webhook).toBe('');

    const [rotateUnknown, webhookUnknown] = await Promise.all([
      run(['apps', 'rotate-secret', 'no-such-app', '--data', data]),
      run(['apps', 'set-webhook', 'no-such-app', 'https://example.com/hook', '--data', data]),
    ]);
    expectOneLine(rotateUnknown, 2, '"no-such-app"');
    expectOneLine(webhookUnknown, 2, '"no-such-app"');

    expect((await server.stop()).code).toBe(0);
  });

  it('a store that refuses a write: one line saying so, exit 1, nothing stored', async () => {
    const data = tempDir();
    expect((await run(['apps', 'list', '--data', data])).code).toBe(0);
    // The file's own refusal, as a disk that fails would give: the store answers a StoreError.
    const db = new Database(join(data, 'realtime.db'));
    db.exec(`CREATE TRIGGER refuse BEFORE INSERT ON apps BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    db.close();
    const [create, serveConfig, serveFirst] = await Promise.all([
      run(['apps', 'create', '--key', 'shop', '--data', data]),
      // The config's apps, stored before the port opens.
      run([
        'serve',
        '--port',
        '0',
        '--data',
        data,
        '--config',
        writeConfig({ apps: [{ key: 'a', secret: SECRET_A }] }),
      ]),
      // The development app, stored once the server listens: it stops again.
      run(['serve', '--port', '0', '--data', data]),
    ]);
    expectOneLine(create, 1, 'refused by the test');
    expectOneLine(serveConfig, 1, 'refused by the test');
    expect(serveFirst.code, serveFirst.stderr).toBe(1);
    expect(serveFirst.stderr).toMatch(/^realtime: [^\n]*refused by the test[^\n]*\n$/);
    expect(serveFirst.stdout).not.toContain('listening on');
    expect((await run(['apps', 'list', '--json', '--data', data])).stdout).toBe('[]\n');
  });

  it('keygen prints 32 random bytes as 43 base64url characters, different each time', async () => {
    const [a, b] = await Promise.all([run(['keygen']), run(['keygen'])]);
    for (const exit of [a, b]) {
      expect(exit.code, exit.stderr).toBe(0);
      expect(exit.stdout).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
      expect(Buffer.from(exit.stdout.trim(), 'base64url')).toHaveLength(32);
    }
    expect(a.stdout).not.toBe(b.stdout);
  });
});

describe('apps show', () => {
  it('shows an app with its secret hidden unless --secret, as text or JSON', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--name', 'Shop', '--key', 'shop', '--json', '--data', data]);
    const app = JSON.parse(created.stdout) as App;

    const text = await run(['apps', 'show', 'shop', '--data', data]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^key: +shop$/m);
    expect(text.stdout).toMatch(/^name: +Shop$/m);
    expect(text.stdout).toMatch(/^secret: +\(hidden; add --secret to show it\)$/m);
    expect(text.stdout).not.toContain(app.secret);

    const shown = await run(['apps', 'show', 'shop', '--secret', '--data', data]);
    expect(shown.stdout).toMatch(new RegExp(`^secret: +${app.secret}$`, 'm'));

    const json = await run(['apps', 'show', 'shop', '--json', '--data', data]);
    const { secret: _secret, ...withoutSecret } = app;
    expect(JSON.parse(json.stdout)).toEqual(withoutSecret);
    const jsonSecret = await run(['apps', 'show', 'shop', '--json', '--secret', '--data', data]);
    expect(JSON.parse(jsonSecret.stdout)).toEqual(app);

    expectOneLine(await run(['apps', 'show', 'nope', '--data', data]), 2, '"nope"');
    expectOneLine(await run(['apps', 'show', '--data', data]), 2, 'app key');
  });
});
describe('set-webhook and create --webhook follow the rule of delivery', () => {
  const refused = [
    'http://example.com/hook',
    'https://127.0.0.1/hook',
    'https://127.1/hook',
    'https://localhost:8443/hook',
    'https://10.1.2.3/hook',
    'https://192.168.0.10/hook',
    'https://169.254.169.254/latest',
    'https://[::1]/hook',
    'https://[::ffff:10.0.0.1]/hook',
    'https://[fd00::1]/hook',
  ];

  it('without --allow-private-webhooks: refuses what a production server refuses, takes public https', async () => {
    const data = tempDir();
    await run(['apps', 'create', '--key', 'k', '--data', data]);
    const results = await Promise.all(refused.map((url) => run(['apps', 'set-webhook', 'k', url, '--data', data])));
    for (const exit of results) expectOneLine(exit, 2, '--allow-private-webhooks');
    expectOneLine(await run(['apps', 'create', '--webhook', 'https://10.0.0.1/', '--data', data]), 2, 'private');
    for (const url of ['https://example.com/hook', 'https://8.8.8.8/hook']) {
      const exit = await run(['apps', 'set-webhook', 'k', url, '--data', data]);
      expect(exit.code, exit.stderr).toBe(0);
    }
  });

  it('with it (flag or REALTIME_ALLOW_PRIVATE_WEBHOOKS=1): takes http:// and loopback, still refuses the rest', async () => {
    const data = tempDir();
    await run(['apps', 'create', '--key', 'k', '--data', data]);
    for (const url of refused) {
      const exit = await run(['apps', 'set-webhook', 'k', url, '--data', data, '--allow-private-webhooks']);
      expect(exit.code, `${url}: ${exit.stderr}`).toBe(0);
    }
    const fromEnv = await run(['apps', 'set-webhook', 'k', 'http://127.0.0.1:9/hook', '--data', data], {
      REALTIME_ALLOW_PRIVATE_WEBHOOKS: '1',
    });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    for (const url of ['ftp://127.0.0.1/hook', 'https://user:pw@127.0.0.1/hook', 'http://127.0.0.1/#frag']) {
      expectOneLine(await run(['apps', 'set-webhook', 'k', url, '--data', data, '--allow-private-webhooks']), 2, url);
    }
  });

  it('a loopback address taken with the flag is delivered to by a server started with the flag', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--key', 'hooked', '--json', '--data', data]);
    const app = JSON.parse(created.stdout) as App;
    const receiver = await startReceiver(app);
    try {
      const set = await run([
        'apps',
        'set-webhook',
        'hooked',
        receiver.url,
        '--data',
        data,
        '--allow-private-webhooks',
      ]);
      expect(set.code, set.stderr).toBe(0);
      const server = await serve(['--data', data, '--allow-private-webhooks']);
      const answer = await send(client(server.url, app.key, app.secret), {
        method: 'POST',
        path: `${API}/webhooks/test`,
      });
      expect(answer.json).toMatchObject({ ok: true, delivered: true, status: 204 });
      expect(receiver.events('webhook.test')).toHaveLength(1);
      expect((await server.stop()).code).toBe(0);
    } finally {
      await receiver.close();
    }
  });
});
