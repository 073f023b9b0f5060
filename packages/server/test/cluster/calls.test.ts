import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { type Receiver, startReceiver } from '../receiver.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, startCluster, sweepRounds, until } from './cluster.js';

type Frame = Record<string, unknown>;
const LEASE_MS = 3000;
const RING_MS = 2000;

/** Calls and group calls whose pages are on different nodes of one Redis, and a node that dies mid-call. */
describe('cluster: calls across nodes', () => {
  let redis: TestRedis;
  let receiver: Receiver;
  let cluster: Cluster;
  const pages: RawPage[] = [];
  let ref = 0;

  const open = async (node: number, user: string) => {
    const page = await helloPage(cluster.nodeOf(node).url, cluster.app.key, await cluster.sdk(0).identityToken(user));
    pages.push(page);
    return page;
  };
  const invite = async (page: RawPage, from: string, to: string): Promise<string> => {
    const r = ++ref;
    page.send({ t: 'call.invite', ref: r, to, token: await cluster.sdk(1).callToken(from, { to, media: ['audio'] }) });
    const placed = await page.next((f) => f.ref === r, 'call.placed');
    expect(placed).toMatchObject({ t: 'call.placed' });
    return placed.call as string;
  };
  const accept = async (page: RawPage, call: string) => {
    const r = ++ref;
    page.send({ t: 'call.accept', ref: r, call });
    expect(await page.next((f) => f.ref === r, 'call.accepted')).toMatchObject({ t: 'call.accepted' });
  };
  const joinGroup = async (page: RawPage, user: string, group: string): Promise<Frame> => {
    const r = ++ref;
    page.send({ t: 'group.join', ref: r, group, token: await cluster.sdk(2).callToken(user, { group }) });
    return page.next((f) => f.ref === r, 'group.joined');
  };
  const endedOf = (call: string) => receiver.events('call.ended').filter((e) => e.call_id === call);

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-calls', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    receiver = await startReceiver(app);
    cluster = await startCluster({
      app: { ...app, webhook: receiver.url },
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('calls') },
      nodeLeaseMs: LEASE_MS,
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
      calls: { ringMs: RING_MS },
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await receiver?.close();
    await redis?.close();
  });

  it('rings the callee on two nodes, connects from a third, relays signals across nodes, reports once', async () => {
    const alice = await open(0, 'alice');
    const bob1 = await open(1, 'bob');
    const bob2 = await open(2, 'bob');
    const call = await invite(alice, 'alice', 'bob');
    await bob1.next((f) => f.t === 'call.ring' && f.call === call, 'ring on node 1');
    await bob2.next((f) => f.t === 'call.ring' && f.call === call, 'ring on node 2');
    await accept(bob2, call);
    await alice.next((f) => f.t === 'call.answered' && f.call === call, 'answered on node 0');
    expect(await bob1.next((f) => f.t === 'call.ended' && f.call === call, 'elsewhere')).toMatchObject({
      reason: 'elsewhere',
    });
    alice.send({ t: 'call.signal', call, data: { sdp: { type: 'offer', sdp: 'o' } } });
    expect(await bob2.next((f) => f.t === 'call.signal', 'offer on node 2')).toMatchObject({
      data: { sdp: { type: 'offer', sdp: 'o' } },
    });
    bob2.send({ t: 'call.signal', call, data: { sdp: { type: 'answer', sdp: 'a' } } });
    expect(await alice.next((f) => f.t === 'call.signal', 'answer on node 0')).toMatchObject({
      data: { sdp: { type: 'answer', sdp: 'a' } },
    });
    bob2.send({ t: 'call.hangup', call });
    expect(await alice.next((f) => f.t === 'call.ended' && f.call === call, 'ended')).toMatchObject({
      reason: 'completed',
    });
    await receiver.waitFor(() => endedOf(call).length === 1, 'call.ended');
    await sweepRounds(LEASE_MS);
    expect(endedOf(call)).toHaveLength(1);
    expect(endedOf(call)[0]).toMatchObject({ from: 'alice', to: 'bob', reason: 'completed' });
    // A later ring on bob's pages comes after anything the hang-up sent them: bob1 heard the call end once.
    const next = await invite(alice, 'alice', 'bob');
    await bob1.next((f) => f.t === 'call.ring' && f.call === next, 'the next ring on node 1');
    alice.send({ t: 'call.hangup', call: next });
    expect(bob1.frames.filter((f) => f.t === 'call.ended' && f.call === call).map((f) => f.reason)).toEqual([
      'elsewhere',
    ]);
  });

  it("counts a caller's invites over every node: pages on two nodes place 5 between them, then rate_limited", async () => {
    const callers = [await open(0, 'hal'), await open(1, 'hal')];
    const ivy = await open(2, 'ivy');
    const token = await cluster.sdk(1).callToken('hal', { to: 'ivy', media: ['audio'] });
    const answers: string[] = [];
    for (let i = 0; i < 8; i++) {
      const page = callers[i % 2] as RawPage;
      const r = ++ref;
      page.send({ t: 'call.invite', ref: r, to: 'ivy', token });
      const answer = await page.next((f) => f.ref === r, `the answer to invite ${i}`);
      answers.push(answer.t === 'error' ? String(answer.code) : String(answer.t));
      if (answer.t === 'call.placed') {
        page.send({ t: 'call.hangup', call: answer.call });
        await page.next((f) => f.t === 'call.ended' && f.call === answer.call, 'cancelled');
      }
    }
    expect(answers).toEqual([...Array<string>(5).fill('call.placed'), ...Array<string>(3).fill('rate_limited')]);
    await until(() => ivy.frames.filter((f) => f.t === 'call.ring').length === 5, 'five rings', 5000);
  });

  it('a call nobody answers ends missed once, whichever of the three nodes sweeps it', async () => {
    const carl = await open(0, 'carl');
    const dina = await open(1, 'dina');
    const call = await invite(carl, 'carl', 'dina');
    await dina.next((f) => f.t === 'call.ring', 'ring');
    expect(await carl.next((f) => f.t === 'call.ended' && f.call === call, 'missed')).toMatchObject({
      reason: 'missed',
    });
    await receiver.waitFor(() => endedOf(call).length === 1, 'call.ended missed');
    // The other two nodes sweep too: none may report it again.
    await sweepRounds(LEASE_MS);
    expect(endedOf(call).map((e) => e.reason)).toEqual(['missed']);
  });

  it('a group of three on three nodes hears every join and leave, and signals reach across nodes', async () => {
    const members = await Promise.all([open(0, 'g0'), open(1, 'g1'), open(2, 'g2')]);
    const [p0, p1, p2] = members as [RawPage, RawPage, RawPage];
    const j0 = await joinGroup(p0, 'g0', 'crew');
    const j1 = await joinGroup(p1, 'g1', 'crew');
    const j2 = await joinGroup(p2, 'g2', 'crew');
    expect((j2.peers as Frame[]).map((p) => p.user)).toEqual(['g0', 'g1']);
    await p0.next((f) => f.t === 'group.peer-joined' && f.user === 'g2', 'g2 joined, seen on node 0');
    await p1.next((f) => f.t === 'group.peer-joined' && f.user === 'g2', 'g2 joined, seen on node 1');
    p2.send({ t: 'group.signal', group: 'crew', to: j0.page, data: { n: 0 } });
    p2.send({ t: 'group.signal', group: 'crew', to: j1.page, data: { n: 1 } });
    expect(await p0.next((f) => f.t === 'group.signal', 'signal to node 0')).toMatchObject({ from: j2.page });
    expect(await p1.next((f) => f.t === 'group.signal', 'signal to node 1')).toMatchObject({ data: { n: 1 } });
    await p1.close();
    for (const page of [p0, p2]) {
      await page.next((f) => f.t === 'group.peer-left' && f.user === 'g1', 'g1 left');
    }
    await receiver.waitFor(() => receiver.events('group.left').filter((e) => e.user === 'g1').length === 1, 'left');
    expect(receiver.events('group.joined').filter((e) => e.call === 'crew')).toHaveLength(3);
  });

  it('a node killed mid-call: the call ends failed and its group member leaves, within a lease and a sweep', async () => {
    const erin = await open(0, 'erin');
    const finn = await open(2, 'finn');
    const call = await invite(erin, 'erin', 'finn');
    await finn.next((f) => f.t === 'call.ring', 'ring');
    await accept(finn, call);
    const survivor = await open(0, 'gus');
    await joinGroup(survivor, 'gus', 'doomed');
    await joinGroup(finn, 'finn', 'doomed');
    await survivor.next((f) => f.t === 'group.peer-joined', 'finn in the group');

    await cluster.nodeOf(2).kill();
    const deadline = 2 * LEASE_MS + 5000;
    await until(
      () =>
        erin.frames.some((f) => f.t === 'call.ended' && f.call === call) &&
        survivor.frames.some((f) => f.t === 'group.peer-left' && f.user === 'finn'),
      'the call ended and the group told, after the node died',
      deadline,
    );
    expect(erin.frames.find((f) => f.t === 'call.ended' && f.call === call)).toMatchObject({ reason: 'failed' });
    await until(
      () => endedOf(call).length === 1 && receiver.events('group.left').some((e) => e.call === 'doomed'),
      'reports of the dead node',
      deadline,
    ).catch((error: unknown) => {
      // What did arrive, to tell a late report from a missing or a doubled one.
      const left = receiver.events('group.left').filter((e) => e.call === 'doomed');
      throw new Error(
        `${(error as Error).message}: call.ended ${JSON.stringify(endedOf(call))}, group.left ${JSON.stringify(left)}`,
      );
    });
    // The other survivor sweeps too: none may report them again.
    await sweepRounds(LEASE_MS);
    expect(endedOf(call).map((e) => e.reason)).toEqual(['failed']);
    expect(receiver.events('group.left').filter((e) => e.call === 'doomed')).toHaveLength(1);
  });
});
