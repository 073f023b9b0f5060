/**
 * Every peer connection a forwarding unit opens gives its UDP port and socket back, however it
 * ends: here a receiving page asks for fresh offers in a burst (each replaces the session before it,
 * often while that one's offer is still being made), then everyone leaves. The service runs in this
 * process, so /proc/self shows what the node holds.
 */
import { Realtime } from '@realtime/node';
import { deriveKey } from '@realtime/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { freeRange } from './free-ports.js';
import { nowSeconds, signToken, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { type Held, heldNow, openedSince } from './proc-sockets.js';
import { StreamPeer } from './stream-peers.js';

type Frame = Record<string, unknown>;

let server: TestServer | undefined;
let ref = 0;
const peers: StreamPeer[] = [];
const pages: RawPage[] = [];

afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.close().catch(() => undefined)));
  await Promise.all(pages.splice(0).map((p) => p.close()));
  await server?.close();
  server = undefined;
});

async function page(identity?: string): Promise<RawPage> {
  const opened = await helloPage((server as TestServer).url, (server as TestServer).app.key, identity);
  pages.push(opened);
  return opened;
}

async function ask(on: RawPage, frame: Frame): Promise<Frame> {
  const r = ++ref;
  on.send({ ...frame, ref: r });
  return on.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
}

const sdpOf = (f: Frame) => (f.data as { sdp?: { type?: string; sdp: string } } | undefined)?.sdp;

/** Waits (bounded) until the node holds no socket or UDP port it did not hold at `start`, then says which it still holds. */
async function released(start: Held): Promise<void> {
  const left = () => openedSince(start);
  const none = (opened: ReturnType<typeof left>) => opened.sockets.length === 0 && opened.udpPorts.length === 0;
  await waitFor(
    () => none(left()),
    `the sockets opened since the start closed (still ${JSON.stringify(left())})`,
    10_000,
  ).catch(() => undefined);
  expect(left()).toStrictEqual({ sockets: [], udpPorts: [] });
}

describe('peer connections of forwarding units release their sockets', () => {
  it('a viewer restarting 30 times in a burst leaves no port or descriptor once the stream is gone (with --media-ports)', async () => {
    server = await startTestServer({ streams: { remoteAddresses: ['127.0.0.1'], portRange: await freeRange(64) } });
    const sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    const start = heldNow();
    const stream = 'burst';

    const presenter = await page();
    const presenterGrant = await sdk.streamGrant(stream, { role: 'presenter' });
    expect(await ask(presenter, { t: 'stream.present', stream, grant: presenterGrant })).toMatchObject({
      t: 'stream.presenting',
    });
    const sending = new StreamPeer();
    peers.push(sending);
    presenter.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await sending.offer() } } });
    const answer = await presenter.next((f) => f.t === 'stream.signal', 'the unit’s answer');
    await sending.accept(sdpOf(answer)?.sdp as string);
    await sending.connected;
    await presenter.next((f) => f.t === 'stream.live', 'stream.live');

    const viewer = await page();
    const viewerGrant = await sdk.streamGrant(stream, { role: 'viewer' });
    expect(await ask(viewer, { t: 'stream.watch', stream, grant: viewerGrant })).toMatchObject({ live: true });
    await viewer.next((f) => f.t === 'stream.signal' && sdpOf(f)?.type === 'offer', 'the first offer');
    for (let i = 0; i < 30; i++) viewer.send({ t: 'stream.signal', stream, data: { restart: true } });
    // At least one fresh offer answers the burst.
    await viewer.next((f) => f.t === 'stream.signal' && sdpOf(f)?.type === 'offer', 'an offer after the burst');

    expect(await ask(viewer, { t: 'stream.leave', stream })).toMatchObject({ t: 'stream.left' });
    expect(await ask(presenter, { t: 'stream.leave', stream })).toMatchObject({ t: 'stream.left' });
    await Promise.all(peers.splice(0).map((p) => p.close()));
    await Promise.all(pages.splice(0).map((p) => p.close()));
    await sdk.close();
    await released(start);
  }, 30_000);

  it('a presenter offering 20 times in a burst gets one unit at a time and leaves nothing behind (with --media-ports)', async () => {
    server = await startTestServer({ streams: { remoteAddresses: ['127.0.0.1'], portRange: await freeRange(64) } });
    const sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
    const start = heldNow();
    const stream = 'offers';
    const presenter = await page();
    const grant = await sdk.streamGrant(stream, { role: 'presenter' });
    expect(await ask(presenter, { t: 'stream.present', stream, grant })).toMatchObject({ t: 'stream.presenting' });
    const offers: string[] = [];
    for (let i = 0; i < 20; i++) {
      const peer = new StreamPeer();
      peers.push(peer);
      offers.push(await peer.offer());
    }
    for (const sdp of offers) presenter.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp } } });
    // Each offer in turn ends the unit before it: the last one's unit is the one left running.
    await waitFor(
      () => presenter.frames.filter((f) => f.t === 'stream.signal' || f.t === 'error').length === 20,
      'an answer (or a refusal) to each offer',
      10_000,
    );
    expect(presenter.frames.filter((f) => f.t === 'error')).toEqual([]);
    expect(await ask(presenter, { t: 'stream.leave', stream })).toMatchObject({ t: 'stream.left' });
    await Promise.all(peers.splice(0).map((p) => p.close()));
    await Promise.all(pages.splice(0).map((p) => p.close()));
    await sdk.close();
    await released(start);
  }, 30_000);

  it('a group page restarting its session on another page’s unit 100 times leaves nothing behind (any free port)', async () => {
    server = await startTestServer({
      calls: { groupUnitFrom: 2, groupMaxPages: 4 },
      streams: { remoteAddresses: ['127.0.0.1'] },
    });
    const start = heldNow();
    const group = 'burst';
    const secret = server.app.secret;
    const member = async (user: string) => {
      const identity = await signToken({ sub: user, exp: nowSeconds() + 600 }, { secret });
      const p = await page(identity);
      const token = await signToken(
        { sub: user, group, media: ['audio', 'video'], exp: nowSeconds() + 600 },
        { key: deriveKey(secret, 'calls') },
      );
      const joined = await ask(p, { t: 'group.join', group, token });
      expect(joined).toMatchObject({ t: 'group.joined', group });
      return { page: p, id: joined.page as string };
    };
    const ann = await member('ann');
    const ben = await member('ben');
    expect(ben.page.frames.find((f) => f.t === 'group.joined')).toMatchObject({ mode: 'unit' });

    // ann sends her media to her unit; ben is offered it, then asks for fresh offers in a burst.
    const sending = new StreamPeer();
    peers.push(sending);
    ann.page.send({
      t: 'group.signal',
      group,
      to: ann.id,
      data: { sdp: { type: 'offer', sdp: await sending.offer() } },
    });
    const answer = await ann.page.next((f) => f.t === 'group.signal' && sdpOf(f)?.type === 'answer', 'the answer');
    await sending.accept(sdpOf(answer)?.sdp as string);
    await sending.connected;
    const offered = (f: Frame) => f.t === 'group.signal' && f.from === ann.id && sdpOf(f)?.type === 'offer';
    await ben.page.next(offered, 'the offer of ann’s unit');
    for (let i = 0; i < 100; i++) ben.page.send({ t: 'group.signal', group, to: ann.id, data: { restart: true } });
    await ben.page.next(offered, 'an offer after the burst');

    for (const m of [ben, ann]) {
      expect(await ask(m.page, { t: 'group.leave', group })).toMatchObject({ t: 'group.left' });
    }
    await Promise.all(peers.splice(0).map((p) => p.close()));
    await Promise.all(pages.splice(0).map((p) => p.close()));
    await released(start);
  }, 30_000);
});
