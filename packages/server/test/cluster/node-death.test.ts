import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newApp } from '../../src/index.js';
import { helloPage, type RawPage } from '../pages.js';
import { type Receiver, startReceiver } from '../receiver.js';
import { redisTarget, type TestRedis, uniquePrefix } from '../redis-server.js';
import { startTestRedis } from '../test-redis.js';
import { type Cluster, eventsOf, joinRoom, pagesOpen, startCluster, sweepRounds, until } from './cluster.js';

type Frame = Record<string, unknown>;
const userOf = (f: Frame) => (f.data as { user?: unknown } | undefined)?.user;
const LEASE_MS = 3000;
const OFFLINE_MS = 400;

/** A node killed with SIGKILL: the others sweep its pages once its lease runs out. */
describe('cluster: kill -9 of a node', () => {
  let redis: TestRedis;
  let receiver: Receiver;
  let cluster: Cluster;
  const pages: RawPage[] = [];
  let marks = 0;

  const open = async (i: number, user: string) => {
    const identity = await cluster.sdk(1).identityToken(user);
    const page = await helloPage(cluster.nodeOf(i).url, cluster.app.key, identity);
    pages.push(page);
    return page;
  };
  const join = (i: number, page: RawPage, room: string) => joinRoom(page, cluster.sdk(i), room, { presence: true });
  const reported = (type: string, match: { room?: string; user?: string }) =>
    receiver
      .events(type)
      .filter(
        (e) =>
          (match.room === undefined || e.room === match.room) && (match.user === undefined || e.user === match.user),
      );

  beforeAll(async () => {
    redis = await startTestRedis();
    const app = newApp({ name: 'cluster-death', rateLimit: { perSecond: 100_000, burst: 100_000 } });
    receiver = await startReceiver(app);
    cluster = await startCluster({
      app: { ...app, webhook: receiver.url },
      engine: { kind: 'redis', ...redisTarget(redis), prefix: uniquePrefix('death') },
      nodeLeaseMs: LEASE_MS,
      offlineDelayMs: OFFLINE_MS,
      allowPrivateWebhooks: true,
      webhooks: { windowMs: 100 },
    });
  });
  afterAll(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await cluster?.close();
    await receiver?.close();
    await redis?.close();
  });

  it("reports the dead node's member.left, room.vacated and user.offline once each; other pages hear $member.left", async () => {
    const [shared, alone] = ['k-shared', 'k-alone'];
    // victim: only on node 0 (the one killed), in both rooms. both: a tab on node 0 and one on node 1.
    const victim = await open(0, 'victim');
    await join(0, victim, shared);
    await join(0, victim, alone);
    const both0 = await open(0, 'both');
    const both1 = await open(1, 'both');
    await join(0, both0, shared);
    await join(1, both1, shared);
    const obs = await open(2, 'obs');
    await join(2, obs, shared);
    await receiver.waitFor(
      () =>
        reported('member.joined', { room: shared }).length === 3 &&
        reported('room.occupied', { room: alone }).length === 1,
      'the joins reported',
    );
    expect(await pagesOpen(cluster.nodeOf(0))).toBe(2);

    await cluster.nodeOf(0).kill();
    // Within the lease, a sweep and the offline delay, with room to spare on a busy machine.
    const deadline = 3 * (LEASE_MS + OFFLINE_MS) + 5000;
    await until(
      () => eventsOf(obs, shared, '$member.left').some((f) => userOf(f) === 'victim'),
      'obs to hear that victim left',
      deadline,
    );
    await receiver.waitFor(
      () =>
        reported('member.left', { room: shared, user: 'victim' }).length >= 1 &&
        reported('member.left', { room: alone, user: 'victim' }).length >= 1 &&
        reported('room.vacated', { room: alone }).length >= 1 &&
        reported('user.offline', { user: 'victim' }).length >= 1,
      "the victim's departures reported",
      deadline,
    );

    // Another sweep round on both survivors, and a later user's whole life reported after it: a
    // departure claimed twice would have been reported by now.
    await sweepRounds(LEASE_MS);
    const marker = await open(1, 'death-marker');
    await marker.close();
    await receiver.waitFor(() => reported('user.offline', { user: 'death-marker' }).length >= 1, 'the marker offline');
    const n = ++marks;
    await cluster.sdk(2).emit({ rooms: [shared], event: 'mark', data: n });
    await obs.next((f) => f.event === 'mark' && f.data === n, 'the mark');
    await both1.next((f) => f.event === 'mark' && f.data === n, 'the mark');

    expect({
      'member.left victim shared': reported('member.left', { room: shared, user: 'victim' }).length,
      'member.left victim alone': reported('member.left', { room: alone, user: 'victim' }).length,
      'room.vacated alone': reported('room.vacated', { room: alone }).length,
      'user.offline victim': reported('user.offline', { user: 'victim' }).length,
      // both still has a tab on node 1: still a member, still online.
      'member.left both': reported('member.left', { user: 'both' }).length,
      'user.offline both': reported('user.offline', { user: 'both' }).length,
      'room.vacated shared': reported('room.vacated', { room: shared }).length,
    }).toEqual({
      'member.left victim shared': 1,
      'member.left victim alone': 1,
      'room.vacated alone': 1,
      'user.offline victim': 1,
      'member.left both': 0,
      'user.offline both': 0,
      'room.vacated shared': 0,
    });
    for (const page of [obs, both1]) {
      expect(eventsOf(page, shared, '$member.left').map(userOf)).toEqual(['victim']);
    }
    expect(await cluster.sdk(2).online(['victim', 'both', 'obs'])).toEqual(['both', 'obs']);
    const late = await open(2, 'late');
    const roster = (await join(2, late, shared)).members as Frame[];
    expect(roster.map((m) => m.user).sort()).toEqual(['both', 'late', 'obs']);
    expect(cluster.nodeOf(1).alive() && cluster.nodeOf(2).alive()).toBe(true);
  });
});
