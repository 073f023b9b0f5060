import { createSocket } from 'node:dgram';
import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { StreamPeer } from './stream-peers.js';

type Frame = Record<string, unknown>;

let server: TestServer;
let sdk: Realtime;
let ref = 0;
const peers: StreamPeer[] = [];

/** Two neighbouring UDP ports on 127.0.0.1 that are free now. */
async function freePortPair(): Promise<[number, number]> {
  const bound = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = createSocket('udp4');
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 50; attempt++) {
    const first = 42_000 + Math.floor(Math.random() * 8000);
    if ((await bound(first)) && (await bound(first + 1))) return [first, first + 1];
  }
  throw new Error('no two free neighbouring UDP ports found');
}

async function ask(page: RawPage, frame: Frame): Promise<Frame> {
  const r = ++ref;
  page.send({ ...frame, ref: r });
  return page.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
}

/** A page presenting `stream` that sends its offer; answers the page and what came back for the offer. */
async function present(stream: string): Promise<{ page: RawPage; reply: Frame }> {
  const page = await helloPage(server.url, server.app.key);
  const grant = await sdk.streamGrant(stream, { role: 'presenter' });
  expect(await ask(page, { t: 'stream.present', stream, grant })).toMatchObject({ t: 'stream.presenting', stream });
  const peer = new StreamPeer();
  peers.push(peer);
  page.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
  const reply = await page.next((f) => f.t === 'stream.signal' || f.t === 'error', 'the unit’s answer or a refusal');
  return { page, reply };
}

/** The ports of the unit's candidates (one per session: its media lines are bundled). */
const candidatePorts = (reply: Frame) => [
  ...new Set(
    [
      ...String((reply.data as { sdp?: { sdp?: string } }).sdp?.sdp).matchAll(
        /^a=candidate:\S+ \d \w+ \d+ \S+ (\d+)/gm,
      ),
    ].map((m) => Number(m[1])),
  ),
];

describe('a media port range that is used up', () => {
  let range: [number, number];

  beforeAll(async () => {
    range = await freePortPair();
    server = await startTestServer({ streams: { remoteAddresses: ['127.0.0.1'], portRange: range } });
    sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
  });

  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
    await sdk.close();
    await server.close();
  });

  it('refuses the offer that finds no free port with unavailable, naming the stream; the units running keep theirs', async () => {
    const first = await present('ports-1');
    const second = await present('ports-2');
    const used = [...candidatePorts(first.reply), ...candidatePorts(second.reply)];
    expect(used.sort()).toStrictEqual([...range]);

    const third = await present('ports-3');
    expect(third.reply).toStrictEqual({
      t: 'error',
      code: 'unavailable',
      message: 'stream.signal: the service has no free media port now; try again later',
      stream: 'ports-3',
    });

    // The first presenter leaves: its port is free again, and the third's next offer gets it.
    expect(await ask(first.page, { t: 'stream.leave', stream: 'ports-1' })).toMatchObject({ t: 'stream.left' });
    const retry = new StreamPeer();
    peers.push(retry);
    third.page.send({
      t: 'stream.signal',
      stream: 'ports-3',
      data: { sdp: { type: 'offer', sdp: await retry.offer() } },
    });
    const answer = await third.page.next((f) => f.t === 'stream.signal' || f.t === 'error', 'the retry’s answer');
    expect(answer.t).toBe('stream.signal');
    expect(candidatePorts(answer)).toStrictEqual(candidatePorts(first.reply));
    await Promise.all([first.page, second.page, third.page].map((page) => page.close()));
  });
});
