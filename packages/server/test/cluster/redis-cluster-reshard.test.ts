import { describe, expect, it } from 'vitest';
import { helloPage } from '../pages.js';
import type { ClusterNode as RedisNode } from '../redis-cluster.js';
import { compareIds, eventsOf, strictlyRising, tally, until } from './cluster.js';
import { openResumingPage, type ResumingPage, untilGotAll } from './resuming-page.js';
import { HISTORY, owns, slotOfRoom, startTraffic } from './shard-traffic.js';
import { useShardedService } from './sharded-service.js';

/** Slots `redis-cli --cluster reshard` moves by count: the source's lowest first. */
const MOVED_BY_COUNT = 200;

/**
 * Three service nodes on a Redis Cluster of their own. While emits and page sends flow to rooms on
 * every shard, slots holding some rooms move to another primary: named slots (moved key by key as
 * redis-cli does) and a count of slots (`redis-cli --cluster reshard`). Nothing acknowledged is lost
 * (it is in history and reached the pages, which may resume), ids still rise per room, and a moved
 * room keeps its epoch (resumes are not truncated).
 */
describe('Redis Cluster: slots moved during traffic', () => {
  const service = useShardedService('reshard', { replicas: 0, node: { webhooks: { windowMs: 100 } } });

  it('loses nothing acknowledged, keeps ids rising and epochs unchanged while slots move by name and by count', async () => {
    const redis = service.redis();
    const cluster = service.cluster();
    const pages = service.pages;
    const { app } = cluster;
    const [a, b, c] = (await redis.nodes()).filter((node) => node.role === 'primary') as [
      RedisNode,
      RedisNode,
      RedisNode,
    ];
    const firstOf = (node: RedisNode) => Math.min(...node.slots.map(([from]) => from));
    /** A room on `node` whose slot passes `test`. */
    const roomOn = (node: RedisNode, name: string, test: (slot: number) => boolean = () => true) => {
      for (let i = 0; i < 100_000; i++) {
        const slot = slotOfRoom(app, `${name}-${i}`);
        if (owns(node, slot) && test(slot)) return `${name}-${i}`;
      }
      throw new Error(`no room on ${node.port}`);
    };
    // Moved by name from a to b; moved by count from c to a (among c's lowest slots, which a reshard
    // by count moves first); staying on b, and on c above what moves.
    const byName = [roomOn(a, 'named-x'), roomOn(a, 'named-y')];
    const byCount = roomOn(c, 'counted', (slot) => slot < firstOf(c) + MOVED_BY_COUNT / 2);
    const staying = [roomOn(b, 'stays-b'), roomOn(c, 'stays-c', (slot) => slot >= firstOf(c) + 2 * MOVED_BY_COUNT)];
    const rooms = [...byName, byCount, ...staying];
    const moved = new Set([...byName, byCount]);

    const watchers = new Map<string, ResumingPage>();
    const senders = new Map<string, ResumingPage>();
    for (const [i, room] of rooms.entries()) {
      const open = (node: number, rules: Parameters<typeof openResumingPage>[0]['rules']) =>
        openResumingPage({ url: () => cluster.nodeOf(node).url, site: app.key, sdk: cluster.sdk(node), room, rules });
      const watcher = await open(i, {});
      const sender = await open(i + 1, { send: ['p'], w: ['p'], history: HISTORY });
      pages.push(watcher, sender);
      watchers.set(room, watcher);
      senders.set(room, sender);
    }

    const traffic = startTraffic(cluster, rooms, senders);
    let movedAt = 0;
    try {
      await until(() => rooms.every((room) => traffic.acked(room).length >= 10), 'traffic in every room', 15_000);
      await redis.reshard(
        a.port,
        b.port,
        byName.map((room) => slotOfRoom(app, room)),
      );
      await redis.reshard(c.port, a.port, MOVED_BY_COUNT);
      movedAt = Date.now();
      for (const room of byName) expect((await redis.primaryOf(slotOfRoom(app, room))).port).toBe(b.port);
      expect((await redis.primaryOf(slotOfRoom(app, byCount))).port).toBe(a.port);
      for (const room of staying) {
        expect(owns(await redis.primaryOf(slotOfRoom(app, room)), slotOfRoom(app, room))).toBe(true);
      }
      await until(
        () => rooms.every((room) => traffic.acked(room).filter((x) => x.startedAt > movedAt).length >= 10),
        'every room taking emits after the moves',
        20_000,
      );
    } finally {
      await traffic.stop();
    }

    // Every request answered (bounded in the traffic): never 500.
    const counts = tally(traffic.answers.map((x) => `${x.status} ${x.error ?? ''}`.trim()));
    expect(
      Object.keys(counts).every((k) => k === '200' || k === '503 unavailable'),
      JSON.stringify(counts),
    ).toBe(true);
    expect(
      traffic.answers.filter((x) => x.status !== 200 && !moved.has(x.room)).map((x) => x.room),
      'rooms not moved answered 503',
    ).toEqual([]);

    /** What each room's pages must end with: its acknowledged emits and page sends, in id order. */
    const acknowledged = new Map(
      rooms.map((room) => {
        const sender = senders.get(room) as ResumingPage;
        const sent = (traffic.sends.get(room) ?? []).flatMap((ref) => {
          const id = sender.sent.get(ref);
          return id === undefined ? [] : [id];
        });
        return [room, [...traffic.acked(room).map((x) => x.id as string), ...sent].sort(compareIds)];
      }),
    );
    // Every acknowledged event reached the watchers (live or replayed): waited for side by side, and
    // a watcher that misses some is reported while the checks below (history included) still run.
    await Promise.all(
      rooms.map((room) =>
        expect
          .soft(
            untilGotAll(
              watchers.get(room) as ResumingPage,
              acknowledged.get(room) ?? [],
              `the watcher of ${room} to get every acknowledged event`,
            ),
          )
          .resolves.toBeUndefined(),
      ),
    );
    for (const room of rooms) {
      const emits = traffic.acked(room).map((x) => x.id as string);
      expect(strictlyRising(emits), `acknowledged ids in ${room}`).toBe(true);
      const all = acknowledged.get(room) ?? [];

      // Ids rose at the watcher over its sockets.
      const watcher = watchers.get(room) as ResumingPage;
      expect(strictlyRising(watcher.events.map((f) => f.id as string)), `ids at the watcher of ${room}`).toBe(true);
      // A moved room keeps its epoch: resumes are not truncated and name the same epoch.
      const [first, ...resumes] = watcher.joins;
      for (const resume of resumes) {
        expect(resume.truncated, `a resume in ${room} after the move`).toBeUndefined();
        expect(resume.epoch).toBe(first?.epoch);
      }
      if (!moved.has(room)) expect(watcher.closes, `closes of the watcher of ${room} (not moved)`).toEqual([]);

      // Every acknowledged event is in the room's history, in id order: a page replays it from the start.
      const reader = await helloPage(cluster.nodeOf(0).url, app.key);
      try {
        reader.send({
          t: 'join',
          ref: 1,
          room,
          token: await cluster.sdk(0).roomToken(room),
          since: '0-0',
          epoch: first?.epoch,
        });
        const joined = await reader.next(
          (f) => f.ref === 1 && (f.t === 'joined' || f.t === 'error'),
          `history of ${room}`,
        );
        expect(joined.t).toBe('joined');
        expect(joined.epoch, `the epoch of ${room}`).toBe(first?.epoch);
        const replay = Number(joined.replay);
        await until(() => eventsOf(reader, room).length >= replay, `the replay of ${room}`);
        const kept = eventsOf(reader, room)
          .slice(0, replay)
          .map((f) => f.id as string);
        expect(strictlyRising(kept)).toBe(true);
        const inHistory = new Set(kept);
        expect(
          all.filter((id) => !inHistory.has(id)),
          `acknowledged events of ${room} missing from its history`,
        ).toEqual([]);
      } finally {
        await reader.close();
      }
    }
    expect([...moved].every((room) => traffic.acked(room).length > 20)).toBe(true);
  }, 60_000);
});
