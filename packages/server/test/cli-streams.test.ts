import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Realtime } from '@realtime/node';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { candidateAddress, filterSdpCandidates } from '../src/units/ice-settings.js';
import { CliProcesses } from './cli-process.js';
import { helloPage, type RawPage } from './pages.js';
import { StreamPeer } from './stream-peers.js';

/**
 * `realtime serve` with the live-stream settings from flags, variables and the config file, spawned
 * for real from its build (`npx tsc -b packages/protocol packages/server` runs before the tests):
 * the forwarding unit announces the media address and binds in the port range, a stream takes the
 * configured number of pages, and a presenter whose media never connects ends at the set timeout.
 */

const APP = { key: 'streamapp', secret: 'secret-streams-0123456789-abcdefghij' };
const WARNING = 'remote browsers cannot reach live streams until --media-address';

const cli = new CliProcesses('realtime-cli-streams-');
const tempDir = () => cli.tempDir();
const writeConfig = (value: unknown) => cli.writeConfig(value);
const start = (args: string[], env: Record<string, string> = {}) => cli.start(args, env);
const kill = (which: Iterable<ChildProcess>, signal: NodeJS.Signals) => cli.kill(which, signal);

const pages: RawPage[] = [];
const peers: StreamPeer[] = [];
const clients: Realtime[] = [];
afterEach(async () => {
  await Promise.all(pages.splice(0).map((page) => page.close()));
  await Promise.all(peers.splice(0).map((peer) => peer.close().catch(() => undefined)));
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(() => cli.cleanup());

/** Address and port of every candidate line of an SDP. */
function candidates(sdp: string): { address: string | undefined; port: number }[] {
  return sdp
    .split(/\r\n|\n/)
    .filter((line) => line.startsWith('a=candidate:'))
    .map((line) => ({ address: candidateAddress(line), port: Number(line.split(/\s+/)[5]) }));
}

type Frame = Record<string, unknown>;

/** A step that may never end (media connecting, the server stopping) fails naming itself. */
function within<T>(promise: Promise<T>, what: string, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
const sdpOf = (frame: Frame) => (frame.data as { sdp: { type: string; sdp: string } }).sdp;

describe('serve with live-stream settings', () => {
  it('flags, variables and the file together: the unit announces the flag’s address in the variable’s ports; the file caps pages and the connect time', async () => {
    // A range of 20 ports somewhere in 20000-59999, so runs side by side rarely meet.
    const min = 20_000 + Math.floor(Math.random() * 400) * 100;
    const max = min + 19;
    const config = writeConfig({
      apps: [APP],
      shutdownDelayMs: 0,
      // The address and the ports are replaced below; the cap and the timeout stay.
      streams: { mediaAddresses: ['192.0.2.1'], portRange: [min + 50, min + 60], maxPages: 2, connectTimeoutMs: 3000 },
    });
    const server = start(
      ['serve', '--port', '0', '--data', tempDir(), '--config', config, '--media-address', '127.0.0.1'],
      { REALTIME_MEDIA_PORTS: `${min}-${max}` },
    );
    const url = `http://127.0.0.1:${await within(server.port, 'the server to listen')}`;
    const sdk = new Realtime({ url, key: APP.key, secret: APP.secret });
    clients.push(sdk);
    const page = async (user: string) => {
      const opened = await helloPage(url, APP.key, await sdk.identityToken(user));
      pages.push(opened);
      return opened;
    };
    let ref = 0;
    const ask = async (on: RawPage, frame: Frame) => {
      const r = ++ref;
      on.send({ ...frame, ref: r });
      return on.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
    };
    const grant = (stream: string, role: 'presenter' | 'viewer', userId: string) =>
      sdk.streamGrant(stream, { role, userId });
    const inRange = (sdp: string) => {
      const found = candidates(sdp);
      expect(found.length).toBeGreaterThan(0);
      for (const { address, port } of found) {
        expect(address).toBe('127.0.0.1');
        expect(port).toBeGreaterThanOrEqual(min);
        expect(port).toBeLessThanOrEqual(max);
      }
    };

    // The presenter's answer and the viewer's offer: candidates on 127.0.0.1 only, ports in the range.
    const ann = await page('ann');
    expect(
      await ask(ann, { t: 'stream.present', stream: 'talk', grant: await grant('talk', 'presenter', 'ann') }),
    ).toMatchObject({
      t: 'stream.presenting',
    });
    const presenter = new StreamPeer();
    peers.push(presenter);
    ann.send({ t: 'stream.signal', stream: 'talk', data: { sdp: { type: 'offer', sdp: await presenter.offer() } } });
    const answer = sdpOf(await ann.next((f) => f.t === 'stream.signal', 'the unit’s answer'));
    inRange(answer.sdp);
    await presenter.accept(answer.sdp);
    await within(presenter.connected, 'the presenter’s media');
    await ann.next((f) => f.t === 'stream.live', 'stream.live');

    const ben = await page('ben');
    expect(
      await ask(ben, { t: 'stream.watch', stream: 'talk', grant: await grant('talk', 'viewer', 'ben') }),
    ).toMatchObject({
      t: 'stream.watching',
      live: true,
    });
    const offer = sdpOf(
      await ben.next((f) => f.t === 'stream.signal' && sdpOf(f).type === 'offer', 'the unit’s offer'),
    );
    inRange(offer.sdp);
    const viewer = new StreamPeer();
    peers.push(viewer);
    ben.send({
      t: 'stream.signal',
      stream: 'talk',
      data: { sdp: { type: 'answer', sdp: await viewer.answer(offer.sdp) } },
    });
    await within(viewer.connected, 'the viewer’s media');

    // maxPages 2: the presenter and one viewer.
    const cid = await page('cid');
    expect(
      await ask(cid, { t: 'stream.watch', stream: 'talk', grant: await grant('talk', 'viewer', 'cid') }),
    ).toMatchObject({
      t: 'error',
      code: 'stream_full',
    });

    // A presenter whose offer names no address never connects: its run ends at the 3 s timeout,
    // inside the 5 s a page waits here (the default is 30 s). Not 1 s: on a loaded 2-core machine a
    // real presenter (ann, above) can take more than a second to connect.
    const dan = await page('dan');
    expect(
      await ask(dan, { t: 'stream.present', stream: 'quiet', grant: await grant('quiet', 'presenter', 'dan') }),
    ).toMatchObject({
      t: 'stream.presenting',
    });
    const silent = new StreamPeer();
    peers.push(silent);
    const bare = filterSdpCandidates(await silent.offer(), () => false).replace(/\r\na=end-of-candidates/g, '');
    dan.send({ t: 'stream.signal', stream: 'quiet', data: { sdp: { type: 'offer', sdp: bare } } });
    await dan.next((f) => f.t === 'stream.signal', 'the unit’s answer');
    expect(await dan.next((f) => f.t === 'stream.ended', 'stream.ended after the connect timeout')).toEqual({
      t: 'stream.ended',
      stream: 'quiet',
    });

    const [exit] = await within(kill([server.child], 'SIGTERM'), 'the server to stop');
    expect(exit?.code).toBe(0);
    // Loopback only: nothing to warn about.
    expect(exit?.stdout).not.toContain(WARNING);
  }, 60_000);

  /** Starts, waits until it listens, stops: what it logged. */
  async function logOf(args: string[], config: unknown): Promise<string> {
    const server = start(['serve', '--port', '0', '--data', tempDir(), '--config', writeConfig(config), ...args]);
    await server.port;
    const [exit] = await kill([server.child], 'SIGTERM');
    expect(exit?.code, exit?.stderr).toBe(0);
    return exit?.stdout ?? '';
  }

  it('listening beyond loopback with streams in a plan and no media address: one warning line', async () => {
    const [warned, addressSet, noStreams] = await Promise.all([
      // No app: the development app made has every feature.
      logOf(['--host', '0.0.0.0'], { shutdownDelayMs: 0 }),
      logOf(['--host', '0.0.0.0'], { shutdownDelayMs: 0, streams: { mediaAddresses: ['127.0.0.1'] } }),
      logOf(['--host', '0.0.0.0'], { shutdownDelayMs: 0, apps: [{ ...APP, features: ['history', 'calls'] }] }),
    ]);
    const lines = warned.split('\n').filter((line) => line.includes(WARNING));
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? '{}') as { level: number; msg: string };
    expect(line.level).toBe(40);
    expect(line.msg).toContain('listens on 0.0.0.0');
    expect(addressSet).not.toContain(WARNING);
    expect(noStreams).not.toContain(WARNING);
  });

  it('serve --help lists the flags and their variables', async () => {
    const exit = await start(['serve', '--help']).exited;
    expect(exit.code).toBe(0);
    for (const text of [
      '--media-address IP',
      '--media-ports MIN-MAX',
      'REALTIME_MEDIA_ADDRESS',
      'REALTIME_MEDIA_PORTS',
    ]) {
      expect(exit.stdout).toContain(text);
    }
  });

  const refusals: [string, string[], Record<string, string>, string][] = [
    [
      'a host name given to --media-address',
      ['--media-address', '127.0.0.1,media.example.com'],
      {},
      '--media-address must be IP addresses, not host names (got "media.example.com")',
    ],
    [
      '0.0.0.0 in REALTIME_MEDIA_ADDRESS',
      [],
      { REALTIME_MEDIA_ADDRESS: '0.0.0.0' },
      'REALTIME_MEDIA_ADDRESS must be addresses browsers can send to',
    ],
    ['an empty --media-address', ['--media-address='], {}, '--media-address must name at least one IP address'],
    [
      'ports below 1024',
      ['--media-ports', '80-2000'],
      {},
      '--media-ports must be two whole port numbers from 1024 to 65535',
    ],
    [
      'ports backwards',
      [],
      { REALTIME_MEDIA_PORTS: '40100-40000' },
      'REALTIME_MEDIA_PORTS must be two whole port numbers',
    ],
    ['one port', ['--media-ports', '40000'], {}, '--media-ports must be MIN-MAX'],
    [
      'a config file streams field unknown',
      ['--config', '{"streams":{"remoteAddresses":[]}}'],
      {},
      'streams: unknown field "remoteAddresses"',
    ],
    [
      'a config file :: address',
      ['--config', '{"streams":{"mediaAddresses":["::"]}}'],
      {},
      'streams.mediaAddresses must be addresses browsers',
    ],
    [
      'a config file port above 65535',
      ['--config', '{"streams":{"portRange":[40000,70000]}}'],
      {},
      'streams.portRange must be two whole',
    ],
    [
      'a config file maxPages of 1',
      ['--config', '{"streams":{"maxPages":1}}'],
      {},
      'streams.maxPages must be a whole number from 2 to 10000',
    ],
    [
      'a config file maxPages above 10000',
      ['--config', '{"streams":{"maxPages":10001}}'],
      {},
      'streams.maxPages must be a whole number',
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
    expect(exit.stdout).toBe('');
    expect(existsSync(join(data, 'realtime.db'))).toBe(false);
  });
});
