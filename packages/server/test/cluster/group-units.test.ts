import { deriveKey } from '@realtime/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { nowSeconds, signToken } from '../gateway-tools.js';
import { helloPage, type RawPage } from '../pages.js';
import { type Receiver, startReceiver } from '../receiver.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { MediaPeer } from '../stream-peers.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, startCluster, sweepRounds, until } from './cluster.js';

type Frame = Record<string, unknown>;
type Sdp = { type?: string; sdp: string };
const LEASE_MS = 3000;

interface Member {
  user: string;
  page: RawPage;
  id: string;
  /** Receiving peers by the sending page's id. */
  from: Map<string, MediaPeer>;
}

const sdpOf = (f: Frame): Sdp | undefined => (f.data as { sdp?: Sdp } | undefined)?.sdp;

/**
 * A group call in unit mode whose pages are on three nodes of one Redis: each page's media goes to
 * the unit on its own node, the other pages' answers reach that unit as node messages, and when a
 * node dies its page leaves the group once, swept by a node still alive.
 */
describe('cluster: a group call in unit mode across nodes', () => {
  let redis: TestRedis;
  let receiver: Receiver;
  let cluster: Cluster;
  const pages: RawPage[] = [];
  const peers: MediaPeer[] = [];
  let ref = 0;
  const group = 'across';

  const frameOf = async (page: RawPage, match: (f: Frame) => boolean, what: string): Promise<Frame> => {
    await until(() => page.frames.some(match), `${what}; last frames ${JSON.stringify(page.frames.slice(-4))}`);
    return page.frames.find(match) as Frame;
  };

  const join = async (node: number, user: string): Promise<Member & { joined: Frame }> => {
    const identity = await cluster.sdk(0).identityToken(user);
    const page = await helloPage(cluster.nodeOf(node).url, cluster.app.key, identity);
    pages.push(page);
    const token = await signToken(
      { sub: user, group, media: ['audio', 'video'], exp: nowSeconds() + 600 },
      { key: deriveKey(cluster.app.secret, 'calls') },
    );
    const r = ++ref;
    page.send({ t: 'group.join', ref: r, group, token });
    const joined = await frameOf(page, (f) => f.ref === r, `${user} joined`);
    expect(joined).toMatchObject({ t: 'group.joined', group });
    return { user, page, id: joined.page as string, from: new Map(), joined };
  };

  /** Offers the page's media to its own unit, on its own node, and sends RTP once connected. */
  const sendMedia = async (m: Member): Promise<void> => {
    const peer = new MediaPeer();
    peers.push(peer);
    m.page.send({ t: 'group.signal', group, to: m.id, data: { sdp: { type: 'offer', sdp: await peer.offer() } } });
    const answer = await frameOf(
      m.page,
      (f) => f.t === 'group.signal' && f.from === m.id && sdpOf(f)?.type === 'answer',
      `${m.user}: its unit's answer`,
    );
    await peer.accept((sdpOf(answer) as Sdp).sdp);
    await peer.connected;
    peer.send();
  };

  /** Takes the offer of the sender's unit (on the sender's node) and answers it `to` the sender. */
  const receive = async (m: Member, sender: Member): Promise<void> => {
    const offer = await frameOf(
      m.page,
      (f) => f.t === 'group.signal' && f.from === sender.id && sdpOf(f)?.type === 'offer',
      `${m.user}: the offer of ${sender.user}'s unit`,
    );
    const peer = new MediaPeer();
    peers.push(peer);
    const sdp = await peer.answer((sdpOf(offer) as Sdp).sdp);
    m.page.send({ t: 'group.signal', group, to: sender.id, data: { sdp: { type: 'answer', sdp } } });
    await peer.connected;
    m.from.set(sender.id, peer);
  };

  const flowing = async (m: Member, sender: Member): Promise<void> => {
    const peer = m.from.get(sender.id) as MediaPeer;
    const start = { ...peer.received };
    await until(
      () => peer.received.audio >= start.audio + 5 && peer.received.video >= start.video + 5,
      `RTP from ${sender.user} to ${m.user} (got ${JSON.stringify(peer.received)})`,
    );
  };

  /**
   * No packet from the sender arrives for half a second (those in flight when it stopped are let
   * through first). RTP has no later packet to wait for: a quiet window, polled until it holds.
   */
  const stopped = async (m: Member, sender: Member): Promise<void> => {
    const peer = m.from.get(sender.id) as MediaPeer;
    const deadline = Date.now() + 5000;
    for (;;) {
      const before = { ...peer.received };
      await new Promise((resolve) => setTimeout(resolve, 500));
      if (peer.received.audio === before.audio && peer.received.video === before.video) return;
      if (Date.now() > deadline) throw new Error(`RTP from ${sender.user} still reaches ${m.user}`);
    }
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-group-units', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    receiver = await startReceiver(app);
    cluster = await startCluster({
      app: { ...app, webhook: receiver.url },
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('group-units') },
      nodeLeaseMs: LEASE_MS,
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
      calls: { groupUnitFrom: 3, groupMaxPages: 4 },
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

  it('each page’s media reaches the pages on the other nodes; a node’s death takes its page out once', async () => {
    const ann = await join(0, 'ann');
    const ben = await join(1, 'ben');
    const cid = await join(2, 'cid');
    expect([ann, ben, cid].map((m) => m.joined.mode)).toEqual(['mesh', 'mesh', 'unit']);
    for (const m of [ann, ben]) {
      await frameOf(m.page, (f) => f.t === 'group.mode' && f.mode === 'unit' && f.group === group, 'group.mode');
    }
    const members = [ann, ben, cid];
    await Promise.all(members.map(sendMedia));
    const pairs = members.flatMap((m) => members.filter((s) => s !== m).map((s) => [m, s] as const));
    await Promise.all(pairs.map(([m, s]) => receive(m, s)));
    await Promise.all(pairs.map(([m, s]) => flowing(m, s)));

    const killedAt = Date.now();
    await cluster.nodeOf(2).kill();
    for (const m of [ann, ben]) {
      await until(
        () => m.page.frames.some((f) => f.t === 'group.peer-left' && f.page === cid.id),
        `${m.user} told cid left, after cid's node died`,
        2 * LEASE_MS + 5000,
      );
      expect(m.page.frames.filter((f) => f.t === 'group.peer-left')).toEqual([
        { t: 'group.peer-left', group, page: cid.id, user: 'cid' },
      ]);
    }
    expect(Date.now() - killedAt).toBeLessThan(2 * LEASE_MS + 5000);
    // The two pages left keep their media flowing between their nodes; the sweep closed the dead
    // page's sessions on their units (its peers here, still up, get nothing more).
    await flowing(ann, ben);
    await flowing(ben, ann);
    await stopped(cid, ann);
    await stopped(cid, ben);
    await until(() => receiver.events('group.left').length === 1, 'group.left reported');
    // Nothing more comes: every event once, after every survivor swept again.
    await sweepRounds(LEASE_MS);
    expect(receiver.events('group.left')).toEqual([
      expect.objectContaining({ type: 'group.left', call: group, user: 'cid', media: ['audio', 'video'] }),
    ]);
    expect(
      receiver
        .events('group.joined')
        .map((e) => e.user)
        .sort(),
    ).toEqual(['ann', 'ben', 'cid']);
  }, 40_000);
});
