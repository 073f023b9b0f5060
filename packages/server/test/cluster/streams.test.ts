import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { type Receiver, startReceiver } from '../receiver.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { StreamPeer } from '../stream-peers.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, startCluster, sweepRounds, until } from './cluster.js';

type Frame = Record<string, unknown>;
const LEASE_MS = 3000;

/**
 * A live stream whose presenter and viewers are on different nodes of one Redis: the viewers'
 * signals reach the forwarding unit on the presenter's node, and when that node dies the run ends
 * once, reported by the node that swept it.
 */
describe('cluster: a live stream across nodes', () => {
  let redis: TestRedis;
  let receiver: Receiver;
  let cluster: Cluster;
  const pages: RawPage[] = [];
  const peers: StreamPeer[] = [];
  let ref = 0;

  const open = async (node: number, user?: string) => {
    const identity = user === undefined ? undefined : await cluster.sdk(0).identityToken(user);
    const page = await helloPage(cluster.nodeOf(node).url, cluster.app.key, identity);
    pages.push(page);
    return page;
  };
  const ask = async (page: RawPage, frame: Frame) => {
    const r = ++ref;
    page.send({ ...frame, ref: r });
    return page.next((f) => f.ref === r, `the answer to ${String(frame.t)}`);
  };
  const grant = (stream: string, role: 'presenter' | 'viewer', user?: string) =>
    cluster.sdk(1).streamGrant(stream, user === undefined ? { role } : { role, userId: user });
  const view = async (page: RawPage, stream: string) => {
    const offer = await page.next(
      (f) => f.t === 'stream.signal' && (f.data as { sdp?: { type?: string } }).sdp?.type === 'offer',
      'the unit’s offer',
    );
    const peer = new StreamPeer();
    peers.push(peer);
    const sdp = await peer.answer((offer.data as { sdp: { sdp: string } }).sdp.sdp);
    page.send({ t: 'stream.signal', stream, data: { sdp: { type: 'answer', sdp } } });
    await peer.connected;
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-streams', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    receiver = await startReceiver(app);
    cluster = await startCluster({
      app: { ...app, webhook: receiver.url },
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('streams') },
      nodeLeaseMs: LEASE_MS,
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
      streams: { remoteAddresses: ['127.0.0.1'] },
    });
  });
  afterAll(async () => {
    await Promise.all(peers.map((p) => p.close().catch(() => undefined)));
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await receiver?.close();
    await redis?.close();
  });

  it('viewers on two other nodes connect to the unit on the presenter’s node; its death ends the run once', async () => {
    const stream = 'town-hall';
    const ann = await open(2, 'ann');
    const ben = await open(0, 'ben');
    const visitor = await open(1);
    expect(await ask(ben, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer', 'ben') })).toMatchObject({
      live: false,
    });

    expect(
      await ask(ann, { t: 'stream.present', stream, grant: await grant(stream, 'presenter', 'ann') }),
    ).toMatchObject({
      t: 'stream.presenting',
    });
    const presenter = new StreamPeer();
    peers.push(presenter);
    ann.send({ t: 'stream.signal', stream, data: { sdp: { type: 'offer', sdp: await presenter.offer() } } });
    const answer = await ann.next((f) => f.t === 'stream.signal', 'the unit’s answer');
    await presenter.accept((answer.data as { sdp: { sdp: string } }).sdp.sdp);
    await presenter.connected;
    const live = await ben.next((f) => f.t === 'stream.live', 'live on node 0');
    await view(ben, stream);
    // A visitor on a third node, coming while live: told so, and offered by the unit on node 2.
    expect(await ask(visitor, { t: 'stream.watch', stream, grant: await grant(stream, 'viewer') })).toMatchObject({
      live: true,
    });
    await view(visitor, stream);

    await cluster.nodeOf(2).kill();
    await until(
      () => [ben, visitor].every((p) => p.frames.some((f) => f.t === 'stream.ended')),
      'the viewers told the run ended, after the presenter’s node died',
      2 * LEASE_MS + 5000,
    );
    await until(() => receiver.events('stream.ended').length === 1, 'stream.ended reported');
    // Nothing more comes: every event once, after every survivor swept again.
    await sweepRounds(LEASE_MS);
    const types = receiver
      .events()
      .filter((e) => e.stream === stream)
      .map((e) => `${String(e.type)}:${String(e.user ?? '')}`);
    expect(types.sort()).toEqual(
      [
        'stream.live:',
        'stream.joined:ann',
        'stream.joined:ben',
        'stream.left:ann',
        'stream.left:ben',
        'stream.ended:',
      ].sort(),
    );
    expect(receiver.events('stream.ended')[0]).toMatchObject({ stream, started_at: live.started_at });
  }, 60_000);
});
