import { Realtime } from '@realtime/node';
import { deriveKey } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { newApp } from '../src/apps/generate.js';
import type { App } from '../src/engines/types.js';
import { freeRange } from './free-ports.js';
import { nowSeconds, signToken, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { boundUdpPorts } from './proc-sockets.js';
import { StreamPeer } from './stream-peers.js';

type Frame = Record<string, unknown>;

let server: TestServer | undefined;
let ref = 0;
const peers: StreamPeer[] = [];
const pages: RawPage[] = [];
const sdks: Realtime[] = [];

afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.close().catch(() => undefined)));
  await Promise.all(pages.splice(0).map((p) => p.close()));
  await Promise.all(sdks.splice(0).map((s) => s.close()));
  await server?.close();
  server = undefined;
});

async function ask(page: RawPage, frame: Frame): Promise<Frame> {
  const r = ++ref;
  page.send({ ...frame, ref: r });
  return page.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
}

/** A page of `app`, with a stream grant maker. */
async function pageOf(app: App): Promise<{ page: RawPage; grant: (stream: string) => Promise<string> }> {
  const running = server as TestServer;
  let sdk = sdks.find((s) => (s as unknown as { key?: string }).key === app.key);
  if (!sdk) {
    sdk = new Realtime({ url: running.url, key: app.key, secret: app.secret });
    sdks.push(sdk);
  }
  const own = sdk;
  const page = await helloPage(running.url, app.key);
  pages.push(page);
  return { page, grant: (stream) => own.streamGrant(stream, { role: 'presenter' }) };
}

/** The page presents `stream` and sends an offer; answers what came back for the offer and the peer that made it. */
async function present(
  of: { page: RawPage; grant: (stream: string) => Promise<string> },
  stream: string,
): Promise<{ reply: Frame; peer: StreamPeer }> {
  const { page } = of;
  expect(await ask(page, { t: 'stream.present', stream, grant: await of.grant(stream) })).toMatchObject({
    t: 'stream.presenting',
    stream,
  });
  const peer = new StreamPeer();
  peers.push(peer);
  page.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
  const reply = await page.next(
    (f) => (f.t === 'stream.signal' || f.t === 'error') && f.stream === stream,
    'the unit’s answer or a refusal',
  );
  return { reply, peer };
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

const inRange = (range: [number, number]) => boundUdpPorts().filter((p) => p >= range[0] && p <= range[1]);

describe('a media port range that is used up', () => {
  it('one app alone may use every port; the offer that finds none is refused unavailable, naming the stream; the units running keep theirs', async () => {
    const range = await freeRange(2);
    // One app alone on the service (the usual install): no share of the range is kept back for
    // another app, so its presenters use the whole range and the range itself runs out.
    server = await startTestServer({ streams: { remoteAddresses: ['127.0.0.1'], portRange: range } });
    const app = server.app;
    const [a, b, c] = [await pageOf(app), await pageOf(app), await pageOf(app)];
    const first = await present(a, 'ports-1');
    const second = await present(b, 'ports-2');
    expect([first.reply.t, second.reply.t]).toStrictEqual(['stream.signal', 'stream.signal']);
    const used = [...candidatePorts(first.reply), ...candidatePorts(second.reply)];
    expect(used.sort()).toStrictEqual([...range]);

    const third = await present(c, 'ports-3');
    expect(third.reply).toStrictEqual({
      t: 'error',
      code: 'unavailable',
      message: 'stream.signal: the service has no free media port now; try again later',
      stream: 'ports-3',
    });

    // The first presenter leaves: its port is free again, and the third's next offer gets it.
    expect(await ask(a.page, { t: 'stream.leave', stream: 'ports-1' })).toMatchObject({ t: 'stream.left' });
    const retry = new StreamPeer();
    peers.push(retry);
    c.page.send({ t: 'stream.signal', stream: 'ports-3', data: { sdp: { type: 'offer', sdp: await retry.offer() } } });
    const answer = await c.page.next((f) => f.t === 'stream.signal' || f.t === 'error', 'the retry’s answer');
    expect(answer.t).toBe('stream.signal');
    expect(candidatePorts(answer)).toStrictEqual(candidatePorts(first.reply));
  });
});

describe('one app flooding offers that never connect', () => {
  it('is bounded per page and to its share of a short range; another app still presents while the flood holds its ports', async () => {
    const range = await freeRange(16);
    const flood = newApp({ name: 'flood' });
    const other = newApp({ name: 'other' });
    // No unit may end idle during this test (it ends within 30 s): what lets the other app in is
    // its share, never a flood's unit timing out first. The idle end has its own test below.
    server = await startTestServer({
      apps: [flood, other],
      streams: { remoteAddresses: ['127.0.0.1'], portRange: range, connectTimeoutMs: 60_000 },
    });

    // One page of the flooding app: 4 units at most (streams.unitsPerPage), the fifth is refused.
    const floodPages = [await pageOf(flood), await pageOf(flood), await pageOf(flood), await pageOf(flood)];
    const [p1] = floodPages;
    if (!p1) throw new Error('a page');
    const answered: Frame[] = [];
    for (let s = 0; s < 4; s++) {
      const { reply } = await present(p1, `f1-${s}`);
      expect(reply).toMatchObject({ t: 'stream.signal', stream: `f1-${s}` });
      answered.push(reply);
    }
    expect((await present(p1, 'f1-4')).reply).toStrictEqual({
      t: 'error',
      code: 'unavailable',
      message:
        'stream.signal: a page sends to at most 4 forwarding units on a node at once (streams.unitsPerPage): leave a stream or group call first',
      stream: 'f1-4',
    });

    // More pages of the same app: it gets 12 of the 16 ports; past that the range is short and the
    // app holds more than its share, so it is refused while ports are still free.
    const refusals: Frame[] = [];
    for (const [i, p] of floodPages.slice(1).entries()) {
      for (let s = 0; s < 4; s++) {
        const stream = `f${i + 2}-${s}`;
        const { reply } = await present(p, stream);
        if (reply.t === 'stream.signal') answered.push(reply);
        else refusals.push(reply);
      }
    }
    expect(answered).toHaveLength(12);
    expect(refusals).toHaveLength(4);
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({
        t: 'error',
        code: 'unavailable',
        message:
          'stream.signal: the media ports of this node are running short and the app holds 12 of 16, its share or more; try again later',
      });
    }
    const floodPorts = answered.flatMap(candidatePorts).sort();
    expect(inRange(range)).toStrictEqual(floodPorts);

    // Another app's presenter gets a unit while the flood still holds its 12 ports, and its media connects.
    const o = await pageOf(other);
    const { reply, peer } = await present(o, 'keynote');
    expect(reply).toMatchObject({ t: 'stream.signal', stream: 'keynote' });
    expect(floodPages.flatMap((p) => p.page.frames.filter((f) => f.t === 'stream.ended'))).toStrictEqual([]);
    expect(inRange(range)).toStrictEqual([...floodPorts, ...candidatePorts(reply)].sort());
    await peer.accept((reply.data as { sdp: { sdp: string } }).sdp.sdp);
    await peer.connected;
    await o.page.next((f) => f.t === 'stream.live', 'stream.live');
  }, 30_000);

  it('units whose media never connects end after streams.connectTimeoutMs and give their ports back; a live unit keeps its port', async () => {
    const range = await freeRange(5);
    // A connection here takes well under a second, even on a busy machine: 3 s is room enough.
    server = await startTestServer({
      streams: { remoteAddresses: ['127.0.0.1'], portRange: range, connectTimeoutMs: 3000 },
    });
    const live = await pageOf(server.app);
    const { reply, peer } = await present(live, 'live');
    await peer.accept((reply.data as { sdp: { sdp: string } }).sdp.sdp);
    await peer.connected;
    await live.page.next((f) => f.t === 'stream.live', 'stream.live');

    const idle = await pageOf(server.app);
    const streams = ['idle-0', 'idle-1', 'idle-2', 'idle-3'];
    for (const stream of streams) expect((await present(idle, stream)).reply).toMatchObject({ t: 'stream.signal' });
    expect(inRange(range)).toHaveLength(5);

    // Each idle unit ends after the bound (its page hears stream.ended) and its port is free again.
    const ended = () => idle.page.frames.filter((f) => f.t === 'stream.ended').map((f) => f.stream as string);
    await waitFor(() => ended().length === 4, 'stream.ended for the 4 idle units', 15_000);
    expect(ended().sort()).toStrictEqual(streams);
    await waitFor(() => inRange(range).length === 1, `one port of the range bound (${inRange(range).length})`, 5000);
    expect(inRange(range)).toStrictEqual(candidatePorts(reply));
    expect(live.page.frames.filter((f) => f.t === 'stream.ended')).toStrictEqual([]);

    // With its ports back, the page may present again.
    expect((await present(idle, 'idle-again')).reply).toMatchObject({ t: 'stream.signal', stream: 'idle-again' });
  }, 30_000);
});

const sdpType = (f: Frame) => (f.data as { sdp?: { type?: string } } | undefined)?.sdp?.type;

describe('a viewer session that finds no free port', () => {
  const noPort = 'the service has no free media port now; try again later';

  it('tells the watching page unavailable, naming the stream, when it goes live and on each restart; a freed port is offered on the next restart', async () => {
    // Two ports: the presenter's unit and one viewer's session; the other viewer finds none.
    const range = await freeRange(2);
    server = await startTestServer({ streams: { remoteAddresses: ['127.0.0.1'], portRange: range } });
    const app = server.app;
    const stream = 'one-seat';
    const presenting = await pageOf(app);
    const sdk = sdks[0] as Realtime;
    const viewers = [await pageOf(app), await pageOf(app)].map((v) => v.page);
    for (const page of viewers) {
      const grant = await sdk.streamGrant(stream, { role: 'viewer' });
      expect(await ask(page, { t: 'stream.watch', stream, grant })).toMatchObject({ live: false });
    }
    const { reply, peer } = await present(presenting, stream);
    await peer.accept((reply.data as { sdp: { sdp: string } }).sdp.sdp);
    await peer.connected;
    const told = (page: RawPage) =>
      page.next(
        (f) => f.stream === stream && (f.t === 'error' || (f.t === 'stream.signal' && sdpType(f) === 'offer')),
        'an offer or a refusal for the viewer',
      );
    const [a, b] = await Promise.all(viewers.map(told));
    if (!a || !b) throw new Error('two answers');
    const refused = a.t === 'error' ? 0 : 1;
    expect([a.t, b.t].sort()).toStrictEqual(['error', 'stream.signal']);
    const expected = { t: 'error', code: 'unavailable', message: `stream.signal: ${noPort}`, stream };
    expect(refused === 0 ? a : b).toStrictEqual(expected);
    const waiting = viewers[refused] as RawPage;
    const seated = viewers[1 - refused] as RawPage;

    // Asking again while the port is still taken: refused again, not left without a word.
    waiting.send({ t: 'stream.signal', stream, data: { restart: true } });
    expect(await told(waiting)).toStrictEqual(expected);

    // The seated viewer leaves: its port is free, and the next restart gets an offer.
    expect(await ask(seated, { t: 'stream.leave', stream })).toMatchObject({ t: 'stream.left' });
    await waitFor(() => inRange(range).length === 1, 'the seated viewer’s port released', 5000);
    waiting.send({ t: 'stream.signal', stream, data: { restart: true } });
    expect(await told(waiting)).toMatchObject({ t: 'stream.signal', stream, data: { sdp: { type: 'offer' } } });
  }, 30_000);

  it('tells a group page unavailable, naming the group and the page whose unit refused', async () => {
    // Three ports: ann's unit, ben's session on it, and ben's unit; ann's session on ben's unit finds none.
    const range = await freeRange(3);
    server = await startTestServer({
      calls: { groupUnitFrom: 2, groupMaxPages: 4 },
      streams: { remoteAddresses: ['127.0.0.1'], portRange: range },
    });
    const running = server;
    const group = 'full-node';
    const member = async (user: string) => {
      const identity = await signToken({ sub: user, exp: nowSeconds() + 600 }, { secret: running.app.secret });
      const page = await helloPage(running.url, running.app.key, identity);
      pages.push(page);
      const token = await signToken(
        { sub: user, group, media: ['audio', 'video'], exp: nowSeconds() + 600 },
        { key: deriveKey(running.app.secret, 'calls') },
      );
      const joined = await ask(page, { t: 'group.join', group, token });
      expect(joined).toMatchObject({ t: 'group.joined', group });
      return { page, id: joined.page as string };
    };
    const ann = await member('ann');
    const ben = await member('ben');
    const sendMedia = async (m: { page: RawPage; id: string }) => {
      const peer = new StreamPeer();
      peers.push(peer);
      m.page.send({ t: 'group.signal', group, to: m.id, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
      const answer = await m.page.next((f) => f.t === 'group.signal' && sdpType(f) === 'answer', 'its unit’s answer');
      await peer.accept((answer.data as { sdp: { sdp: string } }).sdp.sdp);
      await peer.connected;
    };
    await sendMedia(ann);
    await ben.page.next(
      (f) => f.t === 'group.signal' && f.from === ann.id && sdpType(f) === 'offer',
      'the offer of ann’s unit',
    );
    await sendMedia(ben);
    const expected = {
      t: 'error',
      code: 'unavailable',
      message: `group.signal: ${noPort}`,
      group,
      from: ben.id,
    };
    const refusal = (f: Frame) => f.t === 'error' && f.group === group;
    expect(await ann.page.next(refusal, 'the refusal of ben’s unit')).toStrictEqual(expected);
    // A restart asked of ben's unit while the range is still full: refused again.
    ann.page.send({ t: 'group.signal', group, to: ben.id, data: { restart: true } });
    expect(await ann.page.next(refusal, 'the refusal of the restart')).toStrictEqual(expected);
  }, 30_000);
});
