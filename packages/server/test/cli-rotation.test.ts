import { describe, expect, it } from 'vitest';
import type { App } from '../src/index.js';
import {
  cliLifecycle,
  emit,
  eventually,
  expectOneLine,
  run,
  SECRET_A,
  SECRET_B,
  serve,
  tempDir,
  writeConfig,
} from './cli-harness.js';

cliLifecycle();

const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

describe('apps rotate-secret --overlap, show, sign-webhooks, retire-secret', () => {
  it('keeps the old secret working through the overlap, shows the rotation, and retires it', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--name', 'Shop', '--json', '--data', data]);
    expect(created.code, created.stderr).toBe(0);
    const app = JSON.parse(created.stdout) as App;
    expect(app).not.toHaveProperty('rotation');
    const server = await serve(['--data', data]);
    const show = async (...flags: string[]) => {
      const exit = await run(['apps', 'show', app.key, '--data', data, ...flags]);
      expect(exit.code, exit.stderr).toBe(0);
      return exit.stdout;
    };
    expect(await show()).toMatch(/^rotation: {3}-$/m);

    const before = Date.now();
    const rotated = await run(['apps', 'rotate-secret', app.key, '--overlap', '1h', '--data', data]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const [, secret = '', until = ''] =
      /^secret: (\S+)\nrotation: old secret accepted until (\S+); webhooks signed with the new one\n$/.exec(
        rotated.stdout,
      ) ?? [];
    expect(secret).not.toBe(app.secret);
    expect(secret.length).toBeGreaterThanOrEqual(32);
    const retiresAt = Date.parse(until);
    expect(retiresAt - before).toBeGreaterThanOrEqual(3_600_000);
    expect(retiresAt - Date.now()).toBeLessThanOrEqual(3_600_000);

    // Both secrets work on the running server.
    expect((await eventually(() => emit(server.url, app.key, secret), 200)).status).toBe(200);
    expect((await emit(server.url, app.key, app.secret)).status).toBe(200);

    // show: the state in words, the secrets only with --secret; --json the same as data.
    const [text, json, withSecrets, textWithSecrets, listed] = await Promise.all([
      show(),
      show('--json'),
      show('--json', '--secret'),
      show('--secret'),
      run(['apps', 'list', '--json', '--data', data]),
    ]);
    expect(text).toContain(`rotation:   old secret accepted until ${until}; webhooks signed with the new one\n`);
    for (const output of [text, json, listed.stdout]) {
      expect(output).not.toContain(secret);
      expect(output).not.toContain(app.secret);
    }
    expect(JSON.parse(json).rotation).toEqual({ retiresAt, signer: 'new' });
    expect(JSON.parse(withSecrets)).toMatchObject({
      secret,
      rotation: { retiresAt, signer: 'new', oldSecret: app.secret },
    });
    expect(textWithSecrets).toContain(`old secret: ${app.secret}\n`);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ key: app.key, rotation: { retiresAt, signer: 'new' } }),
    ]);

    // A second rotation with an overlap waits for this one; one with none is always possible.
    expectOneLine(
      await run(['apps', 'rotate-secret', app.key, '--overlap', '24h', '--data', data]),
      1,
      `under way until ${until}`,
    );

    const signer = await run(['apps', 'sign-webhooks', app.key, 'old', '--data', data]);
    expect(signer.code, signer.stderr).toBe(0);
    expect(signer.stdout).toBe(`rotation: old secret accepted until ${until}; webhooks signed with the old one\n`);
    expect(await show()).toContain('webhooks signed with the old one');

    const retired = await run(['apps', 'retire-secret', app.key, '--data', data]);
    expect(retired.code, retired.stderr).toBe(0);
    expect(retired.stdout).toBe('old secret retired: only the current secret is accepted\n');
    const old = await eventually(() => emit(server.url, app.key, app.secret), 401);
    expect([old.status, old.json.error]).toEqual([401, 'bad_signature']);
    expect((await emit(server.url, app.key, secret)).status).toBe(200);
    expect(await show()).toMatch(/^rotation: {3}-$/m);
    expect(JSON.parse(await show('--json'))).not.toHaveProperty('rotation');

    const again = await run(['apps', 'retire-secret', app.key, '--data', data]);
    expect(again.stdout).toBe('no rotation under way: only the current secret is accepted\n');
    expectOneLine(await run(['apps', 'sign-webhooks', app.key, 'new', '--data', data]), 1, 'no rotation');
    expect((await server.stop()).code).toBe(0);
  });

  it('refuses a bad overlap or signer, and an unknown app, in one line', async () => {
    const data = tempDir();
    const created = await run(['apps', 'create', '--key', 'shop', '--data', data]);
    expect(created.code, created.stderr).toBe(0);
    const secretBefore = /^secret: (\S+)$/m.exec(created.stdout)?.[1];
    const [bad, tooLong, signer, oldWithout, unknownSigner, ghostRetire, ghostSign, noKey] = await Promise.all([
      run(['apps', 'rotate-secret', 'shop', '--overlap', '1.5h', '--data', data]),
      run(['apps', 'rotate-secret', 'shop', '--overlap', '31d', '--data', data]),
      run(['apps', 'rotate-secret', 'shop', '--overlap', '1h', '--sign-webhooks', 'both', '--data', data]),
      run(['apps', 'rotate-secret', 'shop', '--sign-webhooks', 'old', '--data', data]),
      run(['apps', 'sign-webhooks', 'shop', 'newest', '--data', data]),
      run(['apps', 'retire-secret', 'ghost', '--data', data]),
      run(['apps', 'sign-webhooks', 'ghost', 'old', '--data', data]),
      run(['apps', 'retire-secret', '--data', data]),
    ]);
    expectOneLine(bad, 2, '--overlap must be 0 or a whole number');
    expectOneLine(tooLong, 2, 'at most 30d');
    expectOneLine(signer, 2, '--sign-webhooks must be new or old');
    expectOneLine(oldWithout, 2, 'needs an --overlap');
    expectOneLine(unknownSigner, 2, 'must be new or old');
    expectOneLine(ghostRetire, 2, '"ghost"');
    expectOneLine(ghostSign, 2, '"ghost"');
    expectOneLine(noKey, 2, 'needs the app key');
    expectOneLine(await run(['apps', 'rotate-secret', 'ghost', '--overlap', '1h', '--data', data]), 2, '"ghost"');
    // Nothing was changed by any of them.
    const shown = await run(['apps', 'show', 'shop', '--secret', '--data', data]);
    expect(shown.stdout).toContain(`secret:     ${secretBefore}\n`);
    expect(shown.stdout).toMatch(/^rotation: {3}-$/m);
    expect(ISO.test(shown.stdout)).toBe(false);
  });

  it('a rotation written in the config file: both secrets work until oldSecretRetiresAt, and show says so', async () => {
    const data = tempDir();
    const retiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const config = writeConfig({
      apps: [{ key: 'shop', secret: SECRET_B, oldSecret: SECRET_A, oldSecretRetiresAt: retiresAt }],
    });
    const server = await serve(['--data', data, '--config', config]);
    expect((await emit(server.url, 'shop', SECRET_A)).status).toBe(200);
    expect((await emit(server.url, 'shop', SECRET_B)).status).toBe(200);
    const shown = await run(['apps', 'show', 'shop', '--data', data]);
    expect(shown.stdout).toContain(
      `rotation:   old secret accepted until ${retiresAt}; webhooks signed with the new one\n`,
    );
    expect((await server.stop()).code).toBe(0);
  });
});
