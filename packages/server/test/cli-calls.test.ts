import type { ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Realtime } from '@realtime/node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CliProcesses } from './cli-process.js';
import { helloPage, type RawPage } from './pages.js';

/**
 * `realtime serve` with STUN and TURN servers from flags, variables and the config file, spawned for
 * real from its build (`npx tsc -b packages/protocol packages/server` runs before the tests): the
 * pages of a call get them, with TURN credentials of their own user.
 */

const APP = { key: 'callapp', secret: 'secret-calls-0123456789-abcdefghijkl' };
const TURN_SECRET = 'turn-shared-secret-0123456789';

const cli = new CliProcesses('realtime-cli-calls-');
const tempDir = () => cli.tempDir();
const writeConfig = (value: unknown) => cli.writeConfig(value);
const start = (args: string[], env: Record<string, string> = {}) => cli.start(args, env);
const kill = (which: Iterable<ChildProcess>, signal: NodeJS.Signals) => cli.kill(which, signal);

/** Servers of the current test (refused commands end by themselves, and may run concurrently). */
const servers = new Set<ChildProcess>();
const pages: RawPage[] = [];
const clients: Realtime[] = [];
afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await kill(servers, 'SIGKILL');
  servers.clear();
});
afterAll(() => cli.cleanup());

/** What coturn computes for a TURN REST username under the shared secret. */
function turnPassword(username: string): string {
  return createHmac('sha1', TURN_SECRET).update(username).digest('base64');
}

/** A TURN entry for `user`: username `<expiry>:<user>` lasting `ttl` seconds from about now, its password. */
function expectTurn(entry: unknown, urls: string[], user: string, ttl: number): void {
  const { username, credential, ...rest } = entry as { username: string; credential: string };
  expect(rest).toEqual({ urls });
  const [expiry, ...name] = username.split(':');
  expect(name.join(':')).toBe(user);
  expect(Math.abs(Number(expiry) - (Math.floor(Date.now() / 1000) + ttl))).toBeLessThan(60);
  expect(credential).toBe(turnPassword(username));
}

describe('serve with STUN and TURN servers', () => {
  it('flags, variables and the file together: both pages of a call get them, TURN credentials of their own user', async () => {
    const config = writeConfig({
      apps: [APP],
      calls: { ringMs: 30_000, turn: { ttlSeconds: 7200 } },
    });
    const server = start(
      [
        'serve',
        '--port',
        '0',
        '--data',
        tempDir(),
        '--config',
        config,
        '--stun',
        'stun:stun1.example:3478,stun:stun2.example',
      ],
      {
        REALTIME_TURN: 'turn:turn.example:3478?transport=udp,turns:turn.example:5349?transport=tcp',
        REALTIME_TURN_SECRET: TURN_SECRET,
      },
    );
    servers.add(server.child);
    const url = await server.url;
    const sdk = new Realtime({ url, key: APP.key, secret: APP.secret });
    clients.push(sdk);
    const bob = await helloPage(url, APP.key, await sdk.identityToken('bob'));
    const alice = await helloPage(url, APP.key, await sdk.identityToken('alice'));
    pages.push(alice, bob);

    alice.send({ t: 'call.invite', ref: 1, to: 'bob', token: await sdk.callToken('alice', { to: 'bob' }) });
    const placed = await alice.next((f) => f.t === 'call.placed', 'call.placed');
    const ring = await bob.next((f) => f.t === 'call.ring', 'call.ring');
    const stun = { urls: ['stun:stun1.example:3478', 'stun:stun2.example'] };
    const turnUrls = ['turn:turn.example:3478?transport=udp', 'turns:turn.example:5349?transport=tcp'];
    for (const [frame, user] of [
      [placed, 'alice'],
      [ring, 'bob'],
    ] as const) {
      const ice = frame.ice as unknown[];
      expect(ice).toHaveLength(2);
      expect(ice[0]).toEqual(stun);
      expectTurn(ice[1], turnUrls, user, 7200);
    }
    // The secret is in no log line.
    const [exit] = await kill([server.child], 'SIGTERM');
    expect(exit?.code).toBe(0);
    expect(exit?.stdout).not.toContain(TURN_SECRET);
  });

  const SOME_TURN = ['--turn', 'turn:turn.example:3478'];
  const refusals: [string, string[], Record<string, string>, string][] = [
    ['a TURN address given to --stun', ['--stun', 'turn:turn.example:3478'], {}, '--stun: must be stun:'],
    [
      'a bad address in REALTIME_TURN',
      [],
      { REALTIME_TURN: 'turn:ok.example,http://turn.example', REALTIME_TURN_SECRET: TURN_SECRET },
      'REALTIME_TURN: must be turn:',
    ],
    ['TURN without its secret', SOME_TURN, {}, '--turn: TURN servers need their shared secret'],
    ['a secret without TURN', [], { REALTIME_TURN_SECRET: TURN_SECRET }, 'REALTIME_TURN_SECRET is set but no TURN'],
    ['a short secret', [...SOME_TURN, '--turn-secret', 'short'], {}, '--turn-secret must be at least 16 characters'],
    ['a config file calls field unknown', ['--config', '{"calls":{"ice":[]}}'], {}, 'calls: unknown field "ice"'],
    [
      'a config file TURN address among STUN',
      ['--config', '{"calls":{"stun":["turns:a.example"]}}'],
      {},
      'calls.stun: must be stun:',
    ],
  ];
  it.concurrent.for(refusals)('%s: exit 2, one line, nothing stored', async ([, args, env, message], { expect }) => {
    const data = tempDir();
    const withConfig = args.map((arg, i) => (args[i - 1] === '--config' ? writeConfig(JSON.parse(arg)) : arg));
    const exit = await start(['serve', '--port', '0', '--data', data, ...withConfig], env).exited;
    expect(exit.code, exit.stderr).toBe(2);
    const lines = exit.stderr.replace(/\n$/, '').split('\n');
    expect(lines, exit.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^realtime: /);
    expect(lines[0]).toContain(message);
    expect(exit.stderr).not.toContain(TURN_SECRET);
    expect(exit.stdout).toBe('');
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);
  });
});
