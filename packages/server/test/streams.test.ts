import { Realtime } from '@realtime/node';
import { deriveKey } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryEventSink } from '../src/index.js';
import { ForwardingUnit } from '../src/units/forwarding-unit.js';
import { nowSeconds, signToken, skewedClock, waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { StreamPeer } from './stream-peers.js';

type Frame = Record<string, unknown>;
/** The service's clock: the test moves it past a second instead of waiting one. */
const clock = skewedClock();

let server: TestServer;
let sdk: Realtime;
let ref = 0;
const peers: StreamPeer[] = [];

const pageOf = async (user?: string) =>
  helloPage(server.url, server.app.key, user === undefined ? undefined : await sdk.identityToken(user));
const grant = (stream: string, role: 'presenter' | 'viewer', user?: string) =>
  sdk.streamGrant(stream, user === undefined ? { role } : { role, userId: user });

const recorded = (stream: string) =>
  (server.events as MemoryEventSink).events
    .map((e) => e.event as unknown as Frame)
    .filter((e) => typeof e.type === 'string' && e.type.startsWith('stream.') && e.stream === stream);

async function ask(page: RawPage, frame: Frame): Promise<Frame> {
  const r = ++ref;
  page.send({ ...frame, ref: r });
  return page.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
}

/** Presents from a page over a werift peer; resolves once the page heard the stream is live. */
async function goLive(
  page: RawPage,
  stream: string,
  user: string | undefined,
): Promise<{ peer: StreamPeer; live: Frame }> {
  expect(await ask(page, { t: 'stream.present', stream, grant: await grant(stream, 'presenter', user) })).toMatchObject(
    {
      t: 'stream.presenting',
      stream,
      ice: [],
    },
  );
  const peer = new StreamPeer();
  peers.push(peer);
  page.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
  const answer = await page.next((f) => f.t === 'stream.signal', 'the unit’s answer');
  await peer.accept((answer.data as { sdp: { sdp: string } }).sdp.sdp);
  await peer.connected;
  const live = await page.next((f) => f.t === 'stream.live', 'stream.live (presenter)');
  return { peer, live };
}

/** A watching page takes the unit's next offer and connects. */
async function view(page: RawPage, stream: string): Promise<StreamPeer> {
  const offer = await page.next(
    (f) => f.t === 'stream.signal' && (f.data as { sdp?: { type?: string } }).sdp?.type === 'offer',
    'the unit’s offer',
  );
  const peer = new StreamPeer();
  peers.push(peer);
  const sdp = await peer.answer((offer.data as { sdp: { sdp: string } }).sdp.sdp);
  page.send({ t: 'stream.signal', stream, data: { sdp: { type: 'answer', sdp } } });
  await peer.connected;
  return peer;
}

beforeAll(async () => {
  server = await startTestServer({
    streams: { remoteAddresses: ['127.0.0.1'], maxPages: 4 },
    events: new MemoryEventSink(),
    now: clock.now,
  });
  sdk = new Realtime({ url: server.url, key: server.app.key, secret: server.app.secret });
});

afterAll(async () => {
  await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
  await sdk.close();
  await server.close();
});

describe('live streams over raw frames and werift peers', () => {
  it('goes live twice: viewers get offers each run, the webhook pairs are exact, the visitor is never reported', async () => {
    const stream = 'keynote';
    const ann = await pageOf('ann'); // presents
    const ben = await pageOf('ben'); // watches, signed in
    const visitor = await pageOf(); // watches with a grant without sub

    expect(await ask(ben, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', 'ben') })).toEqual({
      t: 'stream.watching',
      ref,
      stream,
      live: false,
      ice: [],
    });
    expect(await ask(visitor, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer') })).toMatchObject({
      live: false,
    });

    // First run: viewers waiting before it went live get `stream.live`, then the unit's offer.
    const first = await goLive(ann, stream, 'ann');
    const startedAt = first.live.started_at as number;
    for (const page of [ben, visitor]) {
      expect(await page.next((f) => f.t === 'stream.live', 'stream.live')).toEqual({
        t: 'stream.live',
        stream,
        started_at: startedAt,
      });
    }
    await Promise.all([view(ben, stream), view(visitor, stream)]);
    clock.advance(1100); // over a second on the service's clock: whole seconds of at least 1

    // The presenter leaves: the run ends for the viewers, who stay on the stream.
    expect(await ask(ann, { t: 'stream.leave', stream })).toEqual({ t: 'stream.left', ref, stream });
    for (const page of [ben, visitor]) await page.next((f) => f.t === 'stream.ended', 'stream.ended');

    // Second run, from the same page presenting again; a viewer coming while live is told so and gets an offer.
    const second = await goLive(ann, stream, 'ann');
    for (const page of [ben, visitor]) await page.next((f) => f.t === 'stream.live' && f !== first.live, 'live again');
    await Promise.all([view(ben, stream), view(visitor, stream)]);
    const cid = await pageOf('cid');
    expect(await ask(cid, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', 'cid') })).toMatchObject({
      live: true,
      started_at: second.live.started_at,
    });
    await view(cid, stream);
    // cid leaves while live: its pair closes; ben's stays open until the run ends.
    expect(await ask(cid, { t: 'stream.leave', stream })).toMatchObject({ t: 'stream.left' });
    await ann.close();
    for (const page of [ben, visitor]) await page.next((f) => f.t === 'stream.ended', 'stream.ended again');

    await waitFor(() => recorded(stream).filter((e) => e.type === 'stream.ended').length === 2, 'two stream.ended');
    await waitFor(() => recorded(stream).filter((e) => e.type === 'stream.left').length === 5, 'five stream.left');
    const events = recorded(stream);
    expect(
      events.map((e) => e.user).filter((u) => u !== undefined && !['ann', 'ben', 'cid'].includes(u as string)),
    ).toEqual([]);
    const runs = events.filter((e) => e.type === 'stream.live');
    const ends = events.filter((e) => e.type === 'stream.ended');
    expect(runs.map((e) => e.started_at)).toEqual([startedAt, second.live.started_at]);
    expect(ends.map((e) => e.started_at)).toEqual(runs.map((e) => e.started_at));
    for (const end of ends) expect(end.ended_at as number).toBeGreaterThanOrEqual(end.started_at as number);
    expect((ends[0]?.ended_at as number) - startedAt).toBeGreaterThanOrEqual(1000);

    // Each signed-in person has one pair per run they were on, matched by watch and joined_at.
    const joined = events.filter((e) => e.type === 'stream.joined');
    const left = events.filter((e) => e.type === 'stream.left');
    expect(joined.map((e) => `${e.user}:${e.role}`).sort()).toEqual(
      ['ann:presenter', 'ann:presenter', 'ben:viewer', 'ben:viewer', 'cid:viewer'].sort(),
    );
    expect(new Set(joined.map((e) => e.watch)).size).toBe(5);
    for (const j of joined) {
      const pair = left.filter((l) => l.watch === j.watch);
      expect(pair).toHaveLength(1);
      const l = pair[0] as Frame;
      expect(l).toMatchObject({ user: j.user, role: j.role, joined_at: j.joined_at });
      expect(l.seconds).toBe(Math.floor(((l.left_at as number) - (j.joined_at as number)) / 1000));
      // Live time only: within the run the pair belongs to.
      const run = ends.find(
        (e) => (e.started_at as number) <= (j.joined_at as number) && (e.ended_at as number) >= (l.left_at as number),
      );
      expect(run).toBeDefined();
    }
    // The first run's presenter pair covers the whole run.
    const annFirst = joined.find((e) => e.user === 'ann' && e.joined_at === startedAt);
    expect(annFirst).toBeDefined();
    expect(left.find((l) => l.watch === annFirst?.watch)?.left_at).toBe(ends[0]?.ended_at);
    await Promise.all([ben.close(), visitor.close(), cid.close()]);
  }, 60_000);

  it('a presenter offering anew ends the run and goes live again on a new unit; viewers get a new offer', async () => {
    const stream = 'renegotiated';
    const ann = await pageOf('ann');
    const ben = await pageOf('ben');
    expect(await ask(ben, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', 'ben') })).toMatchObject({
      live: false,
    });
    const first = await goLive(ann, stream, 'ann');
    await ben.next((f) => f.t === 'stream.live', 'live');
    await view(ben, stream);

    const peer = new StreamPeer();
    peers.push(peer);
    const before = ann.frames.length;
    ann.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
    await ben.next((f) => f.t === 'stream.ended', 'the first run ended');
    const answer = await ann.next((f) => f.t === 'stream.signal' && ann.frames.indexOf(f) >= before, 'the new answer');
    await peer.accept((answer.data as { sdp: { sdp: string } }).sdp.sdp);
    await peer.connected;
    const again = await ben.next((f) => f.t === 'stream.live' && f.started_at !== first.live.started_at, 'live again');
    await view(ben, stream);
    expect(again.started_at as number).toBeGreaterThanOrEqual(first.live.started_at as number);
    await ann.close();
    await ben.next((f) => f.t === 'stream.ended' && ben.frames.indexOf(f) > ben.frames.indexOf(again), 'ended');
    await waitFor(() => recorded(stream).filter((e) => e.type === 'stream.ended').length === 2, 'two runs ended');
    // Each change in its order (live, joined, left, ended), members in the order they came: ben first.
    const run = [
      'stream.live:',
      'stream.joined:ben',
      'stream.joined:ann',
      'stream.left:ben',
      'stream.left:ann',
      'stream.ended:',
    ];
    expect(recorded(stream).map((e) => `${String(e.type)}:${String(e.user ?? '')}`)).toEqual([...run, ...run]);
    await ben.close();
  }, 60_000);

  it('refuses bad grants, a second presenter, a full stream, and signals from pages not on it', async () => {
    const stream = 'refusals';
    const eve = await pageOf('eve');
    const present = async (grantText: string, name = stream) =>
      ask(eve, { t: 'stream.present', stream: name, grant: grantText });

    expect(await present('not-a-jwt')).toMatchObject({ t: 'error', code: 'bad_token', stream });
    const callsKey = await signToken(
      { stream, role: 'presenter', sub: 'eve', exp: nowSeconds() + 600 },
      { key: deriveKey(server.app.secret, 'calls') },
    );
    expect(await present(callsKey)).toMatchObject({ code: 'bad_token' });
    const expired = await signToken(
      { stream, role: 'presenter', sub: 'eve', exp: nowSeconds() - 3600 },
      { key: deriveKey(server.app.secret, 'streamGrant') },
    );
    expect(await present(expired)).toMatchObject({ code: 'token_expired' });
    expect(await present(await grant('other', 'presenter', 'eve'))).toMatchObject({ code: 'wrong_stream' });
    expect(await present(await grant(stream, 'viewer', 'eve'))).toMatchObject({ code: 'wrong_stream' });
    expect(await present(await grant(stream, 'presenter', 'mallory'))).toMatchObject({ code: 'wrong_user' });
    expect(await ask(eve, { t: 'stream.watch', stream, grant: await grant(stream, 'presenter', 'eve') })).toMatchObject(
      {
        code: 'wrong_stream',
      },
    );
    expect(await present(await grant(stream, 'presenter', 'eve'), 'bad\u0000name')).toMatchObject({
      code: 'bad_frame',
    });

    // Not on the stream: leave and signal are refused.
    expect(await ask(eve, { t: 'stream.leave', stream })).toMatchObject({ code: 'not_in_stream' });
    eve.send({ t: 'stream.signal', stream, data: { candidate: { candidate: 'x' } } });
    expect(await eve.next((f) => f.t === 'error' && f.code === 'not_in_stream', 'not_in_stream')).toMatchObject({
      stream,
    });

    expect(await present(await grant(stream, 'presenter', 'eve'))).toMatchObject({ t: 'stream.presenting' });
    expect(await present(await grant(stream, 'presenter', 'eve'))).toMatchObject({ code: 'bad_frame' });
    const fay = await pageOf('fay');
    expect(
      await ask(fay, { t: 'stream.present', stream, grant: await grant(stream, 'presenter', 'fay') }),
    ).toMatchObject({
      code: 'stream_taken',
    });
    // A presenter's signal must be an offer or a candidate; an SDP werift cannot read is the page's fault.
    eve.send({ t: 'stream.signal', stream, data: { sdp: { type: 'answer', sdp: 'v=0' } } });
    expect(await eve.next((f) => f.t === 'error', 'wrong sdp type')).toMatchObject({ code: 'bad_frame', stream });
    eve.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: 'nonsense' } } });
    expect(
      await eve.next((f) => f.t === 'error' && String(f.message).includes('no audio or video'), 'no media'),
    ).toMatchObject({
      code: 'bad_frame',
    });
    eve.send({
      t: 'stream.signal',
      stream,
      data: { sdp: { type: 'offer', sdp: 'v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n' } },
    });
    expect(
      await eve.next((f) => f.t === 'error' && String(f.message).includes('could not use'), 'bad sdp'),
    ).toMatchObject({
      code: 'bad_frame',
    });
    eve.send({ t: 'stream.signal', stream, data: { restart: true } });
    expect(
      await eve.next((f) => f.t === 'error' && String(f.message).includes('sdp or candidate'), 'restart'),
    ).toMatchObject({
      code: 'bad_frame',
    });

    // maxPages is 4 here: the presenter and three viewers, then full.
    const viewers = await Promise.all(['v1', 'v2', 'v3', 'v4'].map((u) => pageOf(u)));
    for (const [i, page] of viewers.entries()) {
      const answer = await ask(page, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', `v${i + 1}`) });
      expect(answer.t).toBe(i < 3 ? 'stream.watching' : 'error');
      if (i === 3) expect(answer).toMatchObject({ code: 'stream_full', stream });
    }
    // Not live: nothing was reported.
    expect(recorded(stream)).toEqual([]);
    await Promise.all([eve, fay, ...viewers].map((p) => p.close()));
  });

  it("a viewer's video wants reach its session on the unit; a bad shape, or a presenter's, is bad_frame", async () => {
    const stream = 'adaptive';
    const told = vi.spyOn(ForwardingUnit.prototype, 'setViewerVideo');
    try {
      const ann = await pageOf('ann');
      const ben = await pageOf('ben');
      await ask(ben, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', 'ben') });
      await goLive(ann, stream, 'ann');
      await view(ben, stream);
      ben.send({ t: 'stream.signal', stream, data: { video: { maxWidth: 640, maxHeight: 360 } } });
      ben.send({ t: 'stream.signal', stream, data: { video: { maxWidth: 640, maxHeight: 360, paused: true } } });
      await waitFor(() => told.mock.calls.length === 2, 'the unit told of both');
      expect(told.mock.calls.map(([, wants]) => wants)).toEqual([
        { maxWidth: 640, maxHeight: 360 },
        { maxWidth: 640, maxHeight: 360, paused: true },
      ]);
      // Told to the viewer's own session there.
      expect(told.mock.results.map((r) => r.value)).toEqual([true, true]);

      const refusedWith = async (page: RawPage, data: Frame, message: string) => {
        const before = page.frames.length;
        page.send({ t: 'stream.signal', stream, data });
        const error = await page.next((f) => f.t === 'error' && page.frames.indexOf(f) >= before, message);
        expect(error).toEqual({ t: 'error', code: 'bad_frame', message: `stream.signal: ${message}`, stream });
      };
      await refusedWith(
        ben,
        { video: { maxWidth: 0 } },
        'data.video.maxWidth must be a whole number of pixels from 1 to 16384',
      );
      await refusedWith(
        ben,
        { video: { maxHeight: 16_385 } },
        'data.video.maxHeight must be a whole number of pixels from 1 to 16384',
      );
      await refusedWith(ben, { video: { paused: 'yes' } }, 'data.video.paused must be true or false');
      await refusedWith(
        ben,
        { video: 'small' },
        'data.video must be { "maxWidth"?: <whole number 1..16384>, "maxHeight"?: <the same>, "paused"?: <boolean> }',
      );
      await refusedWith(
        ann,
        { video: { paused: true } },
        'data.video is for a page receiving video, not from a presenter',
      );
      expect(told).toHaveBeenCalledTimes(2);
      await Promise.all([ann.close(), ben.close()]);
    } finally {
      told.mockRestore();
    }
  });

  it('a page is on at most 8 streams at once', async () => {
    const page = await pageOf('gus');
    for (let i = 0; i < 8; i++) {
      const name = `many-${i}`;
      expect(await ask(page, { t: 'stream.watch', stream: name, grant: await grant(name, 'viewer') })).toMatchObject({
        t: 'stream.watching',
      });
    }
    expect(
      await ask(page, { t: 'stream.watch', stream: 'many-8', grant: await grant('many-8', 'viewer') }),
    ).toMatchObject({
      code: 'stream_full',
    });
    expect(await ask(page, { t: 'stream.leave', stream: 'many-0' })).toMatchObject({ t: 'stream.left' });
    expect(
      await ask(page, { t: 'stream.watch', stream: 'many-8', grant: await grant('many-8', 'viewer') }),
    ).toMatchObject({
      t: 'stream.watching',
    });
    await page.close();
  });

  it('answers not_included to an app whose plan has no live streams', async () => {
    const other = await startTestServer({ app: { features: ['calls'] } });
    try {
      const page = await helloPage(other.url, other.app.key);
      const otherSdk = new Realtime({ url: other.url, key: other.app.key, secret: other.app.secret });
      page.send({ t: 'stream.watch', ref: 1, stream: 's', grant: await otherSdk.streamGrant('s', { role: 'viewer' }) });
      expect(await page.next((f) => f.ref === 1, 'answer')).toMatchObject({ code: 'not_included', stream: 's' });
      await otherSdk.close();
      await page.close();
    } finally {
      await other.close();
    }
  });
});
