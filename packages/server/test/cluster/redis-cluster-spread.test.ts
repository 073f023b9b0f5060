import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { helloPage } from '../pages.js';
import { joinRoom } from './cluster.js';
import { monitorPrimaries, type Touch, tagOf } from './redis-monitor.js';
import { useShardedService } from './sharded-service.js';

const HISTORY: [number, number] = [100, 1];
const ROOMS = 1000;

/**
 * The keys allowed besides a room's, a user's and a node's: low-rate control keys, touched on
 * timers (leases, sweeps, polls, webhook batches) or once per app (its settings, cached), not per
 * emit, join or page send. The test checks that.
 */
const CONTROL: Array<{ name: string; pattern: RegExp }> = [
  { name: 'node leases {nodes}', pattern: /^\{nodes\}:/ },
  { name: 'presence node registry pr:nodes', pattern: /^pr:nodes$/ },
  { name: 'call ring sweeps call:ring:{call-ring-<n>}', pattern: /^call:ring:\{call-ring-\d+\}$/ },
  { name: 'apps app:{apps}:<key>, apps:{apps}', pattern: /^apps?:\{apps\}/ },
];

/** The webhook batches, one tag `{wh}`: a few keys per batch formed (up to 100 events each), well under one per operation. */
const BATCHES = { name: 'webhook batches wh:{wh}...', pattern: /^wh:\{wh\}/ };

/**
 * The webhook report index: 16 keys over 16 slots (spread over the shards), written before a room's
 * reported page send when this node did not write the room's entry in the last second, again when the
 * room's reports list goes from empty to not, and read once per batch. A busy room's page sends touch
 * it about once a second; rooms this quiet (a page send or two a second each) about twice per
 * operation with the batches' reads: a small constant, never growing with the operations.
 */
const INDEX = { name: 'webhook report index wh:{ix<k>}', pattern: /^wh:\{ix\d+\}:/ };

/**
 * Keys of one app that an operation may touch, each an app-wide decision or queue by design (not
 * global: another app's are elsewhere): the app's API rate buckets (one count over every node, split in 8 under their own tags), its
 * webhook events that are no page send (presence and user changes, in the order they happened), and
 * its users' "in a call" marks (a call's decision spans the call and both users: the app's slot).
 * docs/scaling.md says what they cost a single very large app. Each is touched at most about once
 * per operation; the test checks both.
 */
const PER_APP: Array<{ name: string; pattern: (app: string) => RegExp }> = [
  // Split in 8 under their own tags on a cluster (apps/rate-limit.ts): one app's requests spread too.
  {
    name: 'API rate buckets lim:t:api:{<app>:<i>}',
    pattern: (app) => new RegExp(`^lim:t:api:(\\{${app}:\\d\\}|${app})$`),
  },
  { name: 'app webhook events wh:{<app>}:waiting', pattern: (app) => new RegExp(`^wh:\\{${app}\\}:waiting(:b)?$`) },
  { name: 'call marks call:{<app>}:u:<user>', pattern: (app) => new RegExp(`^call:\\{${app}\\}:u:`) },
];

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: T[], width: number, work: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i] as T, i);
      }
    }),
  );
}

/**
 * Three service nodes on a Redis Cluster of their own (3 primaries, 1 replica each): rooms land on
 * every primary, and what an emit, a join or a page send touches is the room's, the user's or the
 * node's (each in its own slot), never a key every operation shares.
 */
describe('Redis Cluster: rooms spread over the shards, no global key per operation', () => {
  const service = useShardedService('spread', { replicas: 1, node: { offlineDelayMs: 200 } });

  it('1,000 rooms emitted to through the API land on all 3 primaries, none holding above 40% of them', async () => {
    const redis = service.redis();
    const cluster = service.cluster();
    const prefix = service.prefix;
    const primaries = (await redis.nodes()).filter((node) => node.role === 'primary').map((node) => node.port);
    const rooms = Array.from({ length: ROOMS }, (_, i) => `spread-${i}`);
    await inParallel(rooms, 24, async (room, i) => {
      const ids = await cluster.sdk(i).emit({ rooms: [room], event: 'e', data: i, history: { [room]: HISTORY } });
      expect(typeof ids[room]).toBe('string');
    });
    // Every key of a room, read on each primary: which primary holds which rooms.
    const held = new Map<number, Set<string>>();
    for (const port of primaries) {
      const primary = new Redis({ host: '127.0.0.1', port });
      try {
        const found = new Set<string>();
        let cursor = '0';
        for (let round = 0; round < 10_000; round++) {
          const [next, keys] = await primary.scan(
            cursor,
            'MATCH',
            `${prefix}{${cluster.app.key}:spread-*`,
            'COUNT',
            1000,
          );
          for (const key of keys) {
            const room = /:(spread-\d+)\}/.exec(key)?.[1];
            if (room) found.add(room);
          }
          cursor = next;
          if (cursor === '0') break;
        }
        held.set(port, found);
      } finally {
        primary.disconnect();
      }
    }
    const counts = primaries.map((port) => held.get(port)?.size ?? 0);
    // Each room on exactly one primary, every room somewhere.
    expect(counts.reduce((a, b) => a + b, 0)).toBe(ROOMS);
    expect(new Set(primaries.flatMap((port) => [...(held.get(port) ?? [])])).size).toBe(ROOMS);
    for (const count of counts) {
      expect(count, `rooms per primary: ${counts.join(', ')}`).toBeGreaterThan(0);
      expect(count, `rooms per primary: ${counts.join(', ')}`).toBeLessThanOrEqual(0.4 * ROOMS);
    }
  });

  it('a traffic run (emits, joins with presence, page sends, user emits) touches only room, user and node keys per operation', async () => {
    const redis = service.redis();
    const receiver = service.receiver();
    const cluster = service.cluster();
    const pages = service.pages;
    const prefix = service.prefix;
    const primaries = (await redis.nodes()).filter((node) => node.role === 'primary').map((node) => node.port);
    const app = cluster.app.key;
    const monitor = await monitorPrimaries(primaries, prefix);
    let ops = 0;
    /** `n` users (`width` at a time), each with a page on node i % 3 in a presence room of its own: opens, joins, sends, is emitted to, closes. */
    const traffic = async (phase: string, n: number, width: number) => {
      const users = Array.from({ length: n }, (_, i) => `${phase}-u${i}`);
      const rooms = users.map((_, i) => `${phase}-r${i}`);
      await inParallel(users, width, async (user, i) => {
        const room = rooms[i] as string;
        const page = await helloPage(cluster.nodeOf(i).url, app, await cluster.sdk(0).identityToken(user));
        pages.push(page);
        await joinRoom(page, cluster.sdk(i), room, {
          userId: user,
          presence: true,
          send: ['p'],
          w: ['p'],
          history: HISTORY,
        });
        for (let k = 0; k < 3; k++) page.send({ t: 'send', ref: 100 + k, room, event: 'p', data: k });
        for (let k = 0; k < 3; k++) await page.next((f) => f.t === 'sent' && f.ref === 100 + k, `sent ${k}`);
        for (let k = 0; k < 3; k++) {
          await cluster.sdk(i + 1).emit({ rooms: [room], event: 'e', data: k, history: { [room]: HISTORY } });
        }
        await cluster.sdk(i + 2).emit({ users: [user], event: 'u', data: i });
        await page.next((f) => f.t === 'event' && f.event === 'u', 'the user event');
        await page.close();
        // open, join, 3 sends, 3 room emits, 1 user emit, close
        ops += 10;
      });
      // The run is over once its last departures were reported (they are written after the closes).
      await receiver.waitFor(
        () => users.every((user) => receiver.events('user.offline').some((e) => e.user === user)),
        `the ${phase} users reported offline`,
        20_000,
      );
      await receiver.waitFor(
        () => receiver.events('emit').filter((e) => String(e.room).startsWith(`${phase}-`)).length === 3 * n,
        `the ${phase} page sends reported`,
        20_000,
      );
      return { rooms, users };
    };

    try {
      // Node ids: the tag of each node's own keys.
      const seeds = new Redis({ host: '127.0.0.1', port: (await redis.primaryOf(`${prefix}{nodes}:lease`)).port });
      const nodeIds = await seeds.zrange(`${prefix}{nodes}:lease`, 0, -1).finally(() => seeds.disconnect());
      expect(nodeIds).toHaveLength(3);
      await monitor.mark();

      const startedSmall = Date.now();
      const small = await traffic('small', 12, 1);
      const smallMs = Date.now() - startedSmall;
      const smallOps = ops;
      const smallTouches = await monitor.mark();
      const startedBig = Date.now();
      const big = await traffic('big', 60, 30);
      const bigMs = Date.now() - startedBig;
      const bigOps = ops - smallOps;
      const bigTouches = await monitor.mark();

      const tags = new Map<string, string>();
      for (const { rooms, users } of [small, big]) {
        for (const room of rooms) tags.set(`${app}:${room}`, 'room');
        for (const user of users) tags.set(`${app}:${user}`, 'user');
      }
      for (const node of nodeIds) tags.set(node, 'node');
      const nameOf = (key: string) => key.slice(prefix.length);
      const kindOf = (key: string) => {
        const kind = tags.get(tagOf(key) ?? '');
        if (kind) return kind;
        const perApp = PER_APP.find(({ pattern }) => pattern(app).test(nameOf(key)));
        if (perApp) return perApp.name;
        if (INDEX.pattern.test(nameOf(key))) return INDEX.name;
        if (BATCHES.pattern.test(nameOf(key))) return BATCHES.name;
        return CONTROL.find(({ pattern }) => pattern.test(nameOf(key)))?.name ?? 'other';
      };
      const count = (touches: Touch[]) => {
        const kinds = new Map<string, number>();
        const other = new Map<string, number>();
        for (const key of touches.filter((t) => !t.lua).flatMap((t) => t.keys)) {
          const kind = kindOf(key);
          kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
          // Named by what they hold, not per app, room or batch, so the list stays short.
          const shape = nameOf(key)
            .replaceAll(app, '<app>')
            .replace(/b_[a-z0-9]+/, '<batch>');
          if (kind === 'other') other.set(shape, (other.get(shape) ?? 0) + 1);
        }
        return { kinds, other };
      };
      const smallCount = count(smallTouches);
      const bigCount = count(bigTouches);
      const perOp = (n: number | undefined, opsDone: number) => (n ?? 0) / opsDone;

      // Every key an operation touched is the room's, the user's or the node's (each room, user and
      // node of the run was touched under its own tag)...
      const tagsTouched = new Set(bigTouches.flatMap((t) => t.keys).map((key) => tagOf(key)));
      for (const [tag, kind] of tags) {
        const ofBig = kind === 'node' || tag.startsWith(`${app}:big-`);
        if (ofBig) expect.soft(tagsTouched.has(tag), `the ${kind} ${tag} touched under its tag`).toBe(true);
      }
      // ...or one of the low-rate control keys, and nothing else (listed with how often each was touched).
      expect
        .soft(
          Object.fromEntries(bigCount.other),
          "keys touched that are not a room's, a user's, a node's or a control key",
        )
        .toEqual({});
      // A control key is not touched per operation: the small run goes one user at a time, the big
      // one with 5 times the operations 30 at a time, in about the same time. A key touched on
      // timers is touched about as often in both, so its touches per operation fall; a key every
      // operation of some kind touches keeps its ratio. Below a tenth of a touch per operation
      // (fewer touches than joins, the rarest operation) a key passes either way.
      const report = CONTROL.map(({ name }) => ({
        name,
        small: smallCount.kinds.get(name) ?? 0,
        big: bigCount.kinds.get(name) ?? 0,
      }));
      // The runs' lengths vary on a busy machine: a key on timers may instead keep its touches per
      // second (a key touched per operation would go about 3 times as often a second in the big run).
      const perSecond = (n: number, ms: number) => n / Math.max(ms / 1000, 0.001);
      for (const { name, small: s, big: b } of report) {
        const timed = perSecond(b, bigMs) <= 1.5 * perSecond(s, smallMs) + 5;
        const fewer = perOp(b, bigOps) < Math.max(0.5 * perOp(s, smallOps), 0.1);
        expect
          .soft(
            timed || fewer,
            `${name}: touched ${s} times in ${smallOps} operations (${smallMs} ms), ${b} in ${bigOps} (${bigMs} ms)`,
          )
          .toBe(true);
      }
      // An app's own keys and the report index: at most about once per operation (a join may report
      // a member and a user event).
      for (const { name } of PER_APP) {
        expect.soft(perOp(bigCount.kinds.get(name), bigOps), `${name} per operation`).toBeLessThanOrEqual(1.5);
      }
      // The index: its writes around a quiet room's page send, and the batches' reads.
      expect.soft(perOp(bigCount.kinds.get(INDEX.name), bigOps), `${INDEX.name} per operation`).toBeLessThanOrEqual(3);
      expect
        .soft(perOp(bigCount.kinds.get(BATCHES.name), bigOps), `${BATCHES.name} per operation`)
        .toBeLessThanOrEqual(0.5);
      // Room keys are touched per operation: their ratio holds (the check above tells them apart).
      expect(perOp(bigCount.kinds.get('room'), bigOps)).toBeGreaterThan(
        0.5 * perOp(smallCount.kinds.get('room'), smallOps),
      );

      // No script touched a key outside the hash tags it was given: on each primary, a key scripts
      // named inside shares its tag with a key given to scripts there. (The webhook batch scripts
      // name their batches' keys in Lua, all under the one tag `{wh}` they are routed by: a batch id
      // is only known inside the script that claims it.)
      for (const touches of [smallTouches, bigTouches]) {
        for (const port of primaries) {
          const given = new Set(touches.filter((t) => t.port === port && !t.lua).flatMap((t) => t.keys));
          const givenTags = new Set([...given].map((key) => tagOf(key)).filter((tag) => tag !== undefined));
          const inside = touches.filter((t) => t.port === port && t.lua).flatMap((t) => t.keys);
          const named = new Set(
            inside
              .filter((key) => !given.has(key) && !givenTags.has(tagOf(key) ?? ''))
              .map((key) => nameOf(key).replace(/b_[a-z0-9]+/, '<batch>')),
          );
          expect.soft([...named].sort(), `keys scripts on ${port} named in Lua`).toEqual([]);
        }
      }
      expect(bigOps).toBe(600);
    } finally {
      monitor.close();
    }
  }, 60_000);
});
