import { Realtime } from '@realtime/node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newApp } from '../src/index.js';
import { ForwardingUnit } from '../src/units/forwarding-unit.js';
import { waitFor } from './gateway-tools.js';
import { startTestServer, type TestServer } from './helpers.js';
import { helloPage, type RawPage } from './pages.js';
import { type TestRedis, uniquePrefix } from './redis-server.js';
import { StreamPeer } from './stream-peers.js';
import { startTestRedis } from './test-redis.js';

type Frame = Record<string, unknown>;

/**
 * Adaptive stream across nodes: two service nodes in this process on one Redis, the presenter (and
 * so the stream's forwarding unit) on one, a viewer on the other. The viewer's `video` wants cross
 * to the unit's node as a node message and reach its session there.
 */
describe('a viewer on another node than the unit asks for a size and a pause', () => {
  let redis: TestRedis;
  let nodes: TestServer[];
  let sdk: Realtime;
  const pages: RawPage[] = [];
  const peers: StreamPeer[] = [];
  const app = newApp({ name: 'video-nodes', rateLimit: { perSecond: 100_000, burst: 100_000 } });
  let ref = 0;

  beforeAll(async () => {
    redis = await startTestRedis();
    const engine = {
      kind: 'redis' as const,
      ...(redis.cluster ? { cluster: redis.cluster } : { url: redis.url }),
      prefix: uniquePrefix('stream-video-nodes'),
    };
    nodes = await Promise.all(
      [0, 1].map(() => startTestServer({ engine, app, streams: { remoteAddresses: ['127.0.0.1'] } })),
    );
    sdk = new Realtime({ url: (nodes[0] as TestServer).url, key: app.key, secret: app.secret });
  });
  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
    for (const page of pages) await page.close();
    await sdk?.close();
    for (const node of nodes ?? []) await node.close();
    await redis?.close();
  });

  const pageOn = async (node: number, user: string) => {
    const page = await helloPage((nodes[node] as TestServer).url, app.key, await sdk.identityToken(user));
    pages.push(page);
    return page;
  };
  const ask = async (page: RawPage, frame: Frame) => {
    const r = ++ref;
    page.send({ ...frame, ref: r });
    return page.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
  };
  const grant = (stream: string, role: 'presenter' | 'viewer', user: string) =>
    sdk.streamGrant(stream, { role, userId: user });

  it('the wants reach the viewer’s session on the presenter’s node', async () => {
    const stream = 'across';
    const told = vi.spyOn(ForwardingUnit.prototype, 'setViewerVideo');
    try {
      const ann = await pageOn(0, 'ann');
      const ben = await pageOn(1, 'ben');
      expect(await ask(ben, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', 'ben') })).toMatchObject({
        t: 'stream.watching',
        live: false,
      });
      expect(
        await ask(ann, { t: 'stream.present', stream, grant: await grant(stream, 'presenter', 'ann') }),
      ).toMatchObject({ t: 'stream.presenting' });
      const presenter = new StreamPeer();
      peers.push(presenter);
      ann.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await presenter.offer() } } });
      const answer = await ann.next((f) => f.t === 'stream.signal', 'the unit’s answer');
      await presenter.accept((answer.data as { sdp: { sdp: string } }).sdp.sdp);
      await presenter.connected;

      const offer = await ben.next(
        (f) => f.t === 'stream.signal' && (f.data as { sdp?: { type?: string } }).sdp?.type === 'offer',
        'the unit’s offer',
      );
      const viewer = new StreamPeer();
      peers.push(viewer);
      const sdp = await viewer.answer((offer.data as { sdp: { sdp: string } }).sdp.sdp);
      ben.send({ t: 'stream.signal', stream, data: { sdp: { type: 'answer', sdp } } });
      await viewer.connected;

      ben.send({ t: 'stream.signal', stream, data: { video: { maxWidth: 320, maxHeight: 180 } } });
      ben.send({ t: 'stream.signal', stream, data: { video: { paused: true } } });
      await waitFor(() => told.mock.calls.length === 2, 'the unit told of both, on the other node');
      expect(told.mock.calls.map(([, wants]) => wants)).toEqual([{ maxWidth: 320, maxHeight: 180 }, { paused: true }]);
      // Told to the viewer's own session on the unit.
      expect(told.mock.results.map((r) => r.value)).toEqual([true, true]);
      // And a bad one is refused on the viewer's node, never crossing.
      ben.send({ t: 'stream.signal', stream, data: { video: { maxWidth: 1.5 } } });
      expect(await ben.next((f) => f.t === 'error', 'bad_frame')).toMatchObject({ code: 'bad_frame', stream });
      expect(told).toHaveBeenCalledTimes(2);
    } finally {
      told.mockRestore();
    }
  }, 30_000);
});
