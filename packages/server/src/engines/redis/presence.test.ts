import type { Member } from '@realtime/protocol';
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rawMonitor } from '../../../test/cluster/redis-monitor.js';
import { redisTarget, startRedis, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { presenceContract } from '../contract/presence.contract.js';
import { StoreError } from '../store-error.js';
import type { Departure, NodeClaim, PresenceStore } from '../types.js';
import { RedisClient, type Script } from './client.js';
import { type RedisPresenceOptions, RedisPresenceStore } from './presence.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startTestRedis();
});

afterAll(async () => {
  await redis?.close();
});

presenceContract('RedisPresenceStore, two nodes', async ({ offlineDelayMs }) => {
  const prefix = uniquePrefix('presence');
  const clients = [
    await RedisClient.open({ ...redisTarget(redis), prefix, checkSlots: true }),
    await RedisClient.open({ ...redisTarget(redis), prefix, checkSlots: true }),
  ];
  return {
    store: new RedisPresenceStore(clients[0] as RedisClient, { offlineDelayMs }),
    // Another node on the same Redis, with its own connection.
    peer: new RedisPresenceStore(clients[1] as RedisClient, { offlineDelayMs }),
    cleanup: async () => {
      for (const client of clients) await client.close();
    },
  };
});

const T0 = 1_700_000_000_000;

/** One command a MONITOR showed: its arguments, and who sent it (`lua`: a script). */
interface Seen {
  args: string[];
  source: string;
}
const DELAY = 10_000;
const LEASE = 15_000;

describe('RedisPresenceStore sweeps', () => {
  const clients: RedisClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  async function open(prefix: string, options: RedisPresenceOptions = {}): Promise<RedisPresenceStore> {
    const client = await RedisClient.open({ ...redisTarget(redis), prefix, checkSlots: true });
    clients.push(client);
    return new RedisPresenceStore(client, { offlineDelayMs: DELAY, ...options });
  }

  /**
   * A store whose connection drops once the `nth` call of script `after` was answered, as a node that
   * dies between two steps: a real disconnect, so its next script fails as with any lost Redis.
   */
  async function openDying(prefix: string, after: string, nth = 1): Promise<RedisPresenceStore> {
    const client = await RedisClient.open({ ...redisTarget(redis), prefix, checkSlots: true });
    clients.push(client);
    let calls = 0;
    const dying = new Proxy(client, {
      get(target, name) {
        if (name === 'script') {
          return (scriptName: string, lua: string): Script => {
            const run = target.script(scriptName, lua);
            if (scriptName !== after) return run;
            return async (keys, args) => {
              const reply = await run(keys, args);
              if (++calls === nth) target.redis.disconnect();
              return reply;
            };
          };
        }
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return new RedisPresenceStore(dying, { offlineDelayMs: DELAY });
  }

  /** A store whose scripts fail (as a shard that is down) where `fails` says so. */
  async function openFailing(prefix: string, fails: (script: string, keys: readonly string[]) => boolean) {
    const client = await RedisClient.open({ ...redisTarget(redis), prefix, checkSlots: true });
    clients.push(client);
    const failing = new Proxy(client, {
      get(target, name) {
        if (name === 'script') {
          return (scriptName: string, lua: string): Script => {
            const run = target.script(scriptName, lua);
            return (keys, args) =>
              fails(scriptName, keys) ? Promise.reject(new StoreError('unavailable')) : run(keys, args);
          };
        }
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return new RedisPresenceStore(failing, { offlineDelayMs: DELAY });
  }

  const texts = (departures: readonly Departure[]) => departures.map((d) => JSON.stringify(d)).sort();

  /** `count` pages of node `na`, each its own user in a room of its own and a presence room of its own. */
  async function deadNode(store: PresenceStore, count: number): Promise<Departure[]> {
    const expected: Departure[] = [];
    for (let i = 0; i < count; i++) {
      const member: Member = { user: `u${i}`, info: { i } };
      await store.pageOpened('app1', member.user, `na.${i}`, T0);
      await store.enterRoom('app1', `r${i}`, `na.${i}`);
      await store.joinRoom('app1', `p${i}`, member, `na.${i}`);
      expected.push({ type: 'room.vacated', app: 'app1', room: `r${i}` });
      expected.push({ type: 'member.left', app: 'app1', room: `p${i}`, member });
    }
    return expected;
  }

  /** Sweeps the claimed node chunk by chunk until it is done, as the node registry does. */
  async function sweepAll(store: PresenceStore, claim: NodeClaim, nowMs: number, limit: number): Promise<Departure[]> {
    const departures: Departure[] = [];
    for (let n = 0; n < 1000; n++) {
      const chunk = await store.sweepNode(claim, nowMs, limit);
      departures.push(...chunk.departures);
      if (chunk.done) return departures;
    }
    throw new Error('the sweep never ended');
  }

  it('sweeps a dead node chunk by chunk, each departure once, its users then due', async () => {
    const prefix = uniquePrefix('sweep');
    const store = await open(prefix);
    const peer = await open(prefix);
    const expected = await deadNode(store, 20);
    const now = T0 + LEASE;
    const swept: Departure[] = [];
    let chunks = 0;
    for (let done = false; !done && chunks < 100; chunks++) {
      const chunk = await peer.sweepNode({ node: 'na', lapse: 1 }, now, 3);
      swept.push(...chunk.departures);
      done = chunk.done;
    }
    // 20 pages, 3 a chunk.
    expect(chunks).toBe(7);
    expect(texts(swept)).toEqual(texts(expected));
    const users = Array.from({ length: 20 }, (_, i) => `u${i}`);
    expect(await peer.online('app1', users, now + DELAY - 1)).toEqual(users.map(() => true));
    expect(await peer.userPages('app1', 'u0')).toBe(0);
    expect(await peer.takeOffline(now + DELAY - 1, 100)).toEqual([]);
    const gone = await peer.takeOffline(now + DELAY, 100);
    expect(gone.map((g) => g.user).sort()).toEqual([...users].sort());
  });

  it('has a node half swept by a sweeper that died finished by a later sweep of the same lapse, no departure twice', async () => {
    const prefix = uniquePrefix('sweep');
    // It dies once the last step of its first chunk (clearing the pages' records) was answered.
    const dying = await openDying(prefix, 'rtPresenceFinish');
    const peer = await open(prefix);
    const expected = await deadNode(peer, 7);
    const now = T0 + LEASE;
    const claim = { node: 'na', lapse: 1 };
    // Its first chunk is answered (what it took is its to report); its next step fails.
    const partial = await dying.sweepNode(claim, now, 2);
    expect(partial).toMatchObject({ done: false });
    expect(partial.departures).toHaveLength(4);
    await expect(dying.sweepNode(claim, now, 2)).rejects.toBeInstanceOf(StoreError);
    // The next claim of the same lapse (the dead sweeper's claim ended) finishes the rest.
    const rest = await sweepAll(peer, claim, now + 10_000, 2);
    expect(rest).toHaveLength(expected.length - partial.departures.length);
    expect(texts([...partial.departures, ...rest])).toEqual(texts(expected));
    expect(await sweepAll(peer, claim, now + 20_000, 2)).toEqual([]);
    // Every user is due, from the sweep that took their page.
    expect((await peer.takeOffline(now + 10_000 + DELAY, 100)).map((g) => g.user).sort()).toEqual(
      Array.from({ length: 7 }, (_, i) => `u${i}`).sort(),
    );
  });

  it('has a chunk whose sweeper died between its room steps and its last step finished by a later sweep, no departure twice', async () => {
    const prefix = uniquePrefix('sweep');
    // It dies once the first room step of its first chunk was answered: the rooms it closed are
    // decided, its user steps and the clearing of the pages' records fail.
    const dying = await openDying(prefix, 'rtPresenceCloseRoom');
    const peer = await open(prefix);
    const expected = await deadNode(peer, 7);
    const now = T0 + LEASE;
    const claim = { node: 'na', lapse: 1 };
    // What it decided and was answered is its to report (with more to sweep); the rest of its chunk
    // (room steps in flight when it died) is decided by Redis but never answered: lost with it.
    const first = await dying.sweepNode(claim, now, 2).catch((error: unknown) => error);
    const answered = first instanceof StoreError ? [] : (first as { departures: Departure[]; done: boolean });
    if (!Array.isArray(answered)) expect(answered.done).toBe(false);
    const partial = Array.isArray(answered) ? [] : answered.departures;
    const rest = await sweepAll(peer, claim, now + 10_000, 2);
    const all = [...partial, ...rest];
    expect(new Set(texts(all)).size).toBe(all.length);
    expect(texts(expected)).toEqual(expect.arrayContaining(texts(all)));
    // Its chunk was 2 pages of 2 rooms each: at most those 4 departures went with it.
    expect(all.length).toBeGreaterThanOrEqual(expected.length - 4);
    expect(await peer.nodePages('na')).toEqual([]);
    for (let i = 0; i < 7; i++) {
      expect(await peer.members('app1', `p${i}`)).toEqual([]);
      expect(await peer.enterRoom('app1', `r${i}`, 'nb.1')).toBe(true);
    }
    // Its user steps never ran: the later sweep closed every user's page, each due once.
    expect((await peer.takeOffline(now + 10_000 + DELAY, 100)).map((g) => g.user).sort()).toEqual(
      Array.from({ length: 7 }, (_, i) => `u${i}`).sort(),
    );
    expect(await peer.takeOffline(now + 100 * DELAY, 100)).toEqual([]);
  });

  it('answers what the steps that worked decided when one slot fails, and leaves the rest for a later close', async () => {
    const prefix = uniquePrefix('partial');
    // The slot of room r1 is down for this store.
    const broken = await openFailing(
      prefix,
      (script, keys) => script === 'rtPresenceCloseRoom' && keys.some((k) => k.includes('{app1:r1}')),
    );
    const peer = await open(prefix);
    const ann: Member = { user: 'ann' };
    await peer.pageOpened('app1', 'ann', 'na.1', T0);
    for (const room of ['r0', 'r1']) {
      await peer.enterRoom('app1', room, 'na.1');
      await peer.joinRoom('app1', room, ann, 'na.1');
    }
    expect(texts(await broken.closePages(['na.1'], T0 + 1000))).toEqual(
      texts([
        { type: 'member.left', app: 'app1', room: 'r0', member: ann },
        { type: 'room.vacated', app: 'app1', room: 'r0' },
      ]),
    );
    // r1 and the page's record of it are left; ann's page is closed (her offline falls due once).
    expect(await peer.members('app1', 'r1')).toEqual([ann]);
    expect(await peer.nodePages('na')).toEqual(['na.1']);
    expect(await peer.userPages('app1', 'ann')).toBe(0);
    // A later close (the node's check) ends the rest, and nothing twice.
    expect(texts(await peer.closePages(['na.1'], T0 + 2000))).toEqual(
      texts([
        { type: 'member.left', app: 'app1', room: 'r1', member: ann },
        { type: 'room.vacated', app: 'app1', room: 'r1' },
      ]),
    );
    expect(await peer.nodePages('na')).toEqual([]);
    expect(await peer.takeOffline(T0 + 1000 + DELAY, 10)).toEqual([{ app: 'app1', user: 'ann' }]);
    // Nothing decided at all: the failure is the answer.
    await peer.enterRoom('app1', 'r1', 'na.2');
    await expect(broken.closePages(['na.2'], T0 + 3000)).rejects.toBeInstanceOf(StoreError);
    expect(await peer.nodePages('na')).toEqual(['na.2']);
  });

  it("has a page's open cut after its record was written closed by the node's check, with nothing to report", async () => {
    const prefix = uniquePrefix('cut');
    const dying = await openDying(prefix, 'rtPresenceHold');
    const peer = await open(prefix);
    await expect(dying.pageOpened('app1', 'ann', 'na.1', T0)).rejects.toBeInstanceOf(StoreError);
    // The record came first: the node's check finds the page, and its close ends nothing.
    expect(await peer.nodePages('na')).toEqual(['na.1']);
    expect(await peer.online('app1', ['ann'], T0)).toEqual([false]);
    expect(await peer.closePages(['na.1'], T0 + 1000)).toEqual([]);
    expect(await peer.nodePages('na')).toEqual([]);
    expect(await peer.takeOffline(T0 + 100 * DELAY, 100)).toEqual([]);
    expect(await peer.pageOpened('app1', 'ann', 'na.2', T0 + 2000)).toBe(true);
  });

  it("has a page's close cut after the user's step finished by the node's check: the user goes offline once, when due", async () => {
    const prefix = uniquePrefix('cut');
    const peer = await open(prefix);
    const dying = await openDying(prefix, 'rtPresenceClosed');
    expect(await peer.pageOpened('app1', 'ann', 'na.1', T0)).toBe(true);
    await peer.enterRoom('app1', 'lobby', 'na.1');
    // The user's step is written (ann's last page went at T0), the record is not cleared.
    await expect(dying.pageClosed('app1', 'ann', 'na.1', T0)).rejects.toBeInstanceOf(StoreError);
    expect(await peer.online('app1', ['ann'], T0 + DELAY - 1)).toEqual([true]);
    expect(await peer.online('app1', ['ann'], T0 + DELAY)).toEqual([false]);
    expect(await peer.nodePages('na')).toEqual(['na.1']);
    // The check closes it as its close would have: the room, and the user's offline, due from T0.
    expect(await peer.closePages(['na.1'], T0 + 1000)).toEqual([{ type: 'room.vacated', app: 'app1', room: 'lobby' }]);
    expect(await peer.takeOffline(T0 + DELAY - 1, 100)).toEqual([]);
    expect(await peer.takeOffline(T0 + DELAY, 100)).toEqual([{ app: 'app1', user: 'ann' }]);
    expect(await peer.takeOffline(T0 + 100 * DELAY, 100)).toEqual([]);
    expect(await peer.nodePages('na')).toEqual([]);
  });

  it("touches only the room's, the user's and the node's slots when a page opens, joins, is counted, leaves and closes", async () => {
    const prefix = uniquePrefix('slots');
    const store = await open(prefix);
    // A node registers before it writes, at most every 30 s (the one low-rate key): a first page did.
    await store.pageOpened('app1', 'first', 'na.0', T0);
    // Every primary's MONITOR (one Redis: the one), which shows the commands scripts run too.
    const client = clients.at(-1) as RedisClient;
    const addresses = await client.forEachPrimary(async (r) => `redis://${r.options.host}:${r.options.port}`);
    const watches = await Promise.all(
      addresses.map(async (url) => {
        const seen: Seen[] = [];
        // On a raw socket: ioredis's monitor mode can throw out of band under load.
        const monitor = await rawMonitor(Number(new URL(url).port), (args, lua) =>
          seen.push({ args, source: lua ? 'lua' : 'client' }),
        );
        return { admin: new Redis(url), monitor, seen };
      }),
    );
    try {
      const ann: Member = { user: 'ann', info: { n: 1 } };
      await store.pageOpened('app1', 'ann', 'na.1', T0);
      await store.enterRoom('app1', 'lobby', 'na.1');
      await store.joinRoom('app1', 'lobby', ann, 'na.1');
      await store.memberCount('app1', 'lobby');
      await store.memberPage('app1', 'lobby', { limit: 10 });
      await store.online('app1', ['ann'], T0);
      await store.userPages('app1', 'ann');
      await store.leaveRoom('app1', 'lobby', 'ann', 'na.1');
      await store.exitRoom('app1', 'lobby', 'na.1');
      await store.pageClosed('app1', 'ann', 'na.1', T0);
      // What the calls above sent, and no more (the monitors would see the key look-ups below too).
      const marker = `${prefix}end`;
      const sent: Seen[] = [];
      for (const { admin, monitor, seen } of watches) {
        await admin.ping(marker);
        for (let i = 0; i < 200 && !seen.some(({ args }) => args.includes(marker)); i++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        const end = seen.findIndex(({ args }) => args.includes(marker));
        expect(end).toBeGreaterThanOrEqual(0);
        sent.push(...seen.slice(0, end));
        monitor.destroy();
      }
      const admin = (watches[0] as (typeof watches)[number]).admin;
      const keysOf = async (args: string[]): Promise<string[]> => {
        try {
          return ((await admin.call('COMMAND', 'GETKEYS', ...args)) as string[]).filter((k) => k.startsWith(prefix));
        } catch {
          return []; // A command without keys (TIME, PING).
        }
      };
      const given = new Set<string>();
      const inside = new Set<string>();
      for (const { args, source } of sent) {
        const keys = await keysOf(args);
        if (source === 'lua') for (const key of keys) inside.add(key);
        else for (const key of keys) given.add(key);
      }
      // Every key a script touched was given to it (none named in Lua)...
      expect(inside.size).toBeGreaterThan(0);
      expect([...inside].filter((key) => !given.has(key))).toEqual([]);
      // ... and all of them are the room's, the user's or the node's.
      const slots = new Map([
        [calculateSlot('{app1:lobby}'), 'room'],
        [calculateSlot('{app1:ann}'), 'user'],
        [calculateSlot('{na}'), 'node'],
      ]);
      const touched = [...given];
      expect(touched.filter((key) => !slots.has(calculateSlot(key)))).toEqual([]);
      expect(new Set(touched.map((key) => slots.get(calculateSlot(key))))).toEqual(new Set(['room', 'user', 'node']));
      expect(touched).not.toContain(`${prefix}pr:nodes`);
    } finally {
      for (const { admin, monitor } of watches) {
        monitor.destroy();
        admin.disconnect();
      }
    }
  });

  it('forgets a node in its registry once it registered long ago and keeps nothing, and keeps one that holds pages', async () => {
    const prefix = uniquePrefix('registry');
    const store = await open(prefix);
    await store.enterRoom('app1', 'lobby', 'na.1');
    await store.enterRoom('app1', 'lobby', 'nb.1');
    await store.exitRoom('app1', 'lobby', 'nb.1');
    const client = clients.at(-1) as RedisClient;
    const registry = client.key('pr:nodes');
    expect((await client.call((r) => r.zrange(registry, 0, -1))).sort()).toEqual(['na', 'nb']);
    // Both registered an hour ago (Redis's clock), as nodes that wrote nothing since.
    const hourAgo = Number((await client.call((r) => r.time()))[0]) * 1000 - 3_600_000;
    await client.call((r) => r.zadd(registry, hourAgo, 'na', hourAgo, 'nb'));
    // The offline poll of another node reads the registry: nb keeps nothing and goes, na stays.
    const peer = await open(prefix);
    expect(await peer.takeOffline(T0, 10)).toEqual([]);
    expect(await client.call((r) => r.zrange(registry, 0, -1))).toEqual(['na']);
    expect(await peer.occupiedRooms('app1', { limit: 10 })).toEqual({
      rooms: [{ room: 'lobby', pages: 1, members: 0 }],
      more: false,
    });
  });

  it("lists a node's pages in bounded SSCAN steps, each page once, never one SMEMBERS of them all", async () => {
    const prefix = uniquePrefix('node-pages');
    const store = await open(prefix);
    const pages = Array.from({ length: 1500 }, (_, i) => `na.${i}`);
    for (const page of pages) await store.enterRoom('app1', 'lobby', page);
    const client = clients.at(-1) as RedisClient;
    // Counted on every primary (on a cluster, the node's keys are on one of them).
    await client.forEachPrimary((r) => r.config('RESETSTAT'));
    expect((await store.nodePages('na')).sort()).toEqual([...pages].sort());
    const stats = (await client.forEachPrimary((r) => r.info('commandstats'))).join('\n');
    expect(stats).not.toMatch(/cmdstat_smembers:/);
    const scans = [...stats.matchAll(/cmdstat_sscan:calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(scans).toBeGreaterThan(1);
  });

  it('answers StoreErrors, not hangs, when Redis is gone', async () => {
    const own = await startRedis();
    try {
      const client = await RedisClient.open({ url: own.url, prefix: uniquePrefix('down'), commandTimeoutMs: 500 });
      clients.push(client);
      const store: PresenceStore = new RedisPresenceStore(client);
      await store.pageOpened('app1', 'ann', 'na.1', T0);
      await own.stop();
      const calls: Array<() => unknown> = [
        () => store.pageOpened('app1', 'ann', 'na.1', T0),
        () => store.pageClosed('app1', 'ann', 'na.1', T0),
        () => store.takeOffline(T0, 10),
        () => store.online('app1', ['ann'], T0),
        () => store.userPages('app1', 'ann'),
        () => store.enterRoom('app1', 'lobby', 'na.1'),
        () => store.exitRoom('app1', 'lobby', 'na.1'),
        () => store.joinRoom('app1', 'lobby', { user: 'ann' }, 'na.1'),
        () => store.leaveRoom('app1', 'lobby', 'ann', 'na.1'),
        () => store.members('app1', 'lobby'),
        () => store.sweepNode({ node: 'na', lapse: 1 }, T0 + LEASE, 100),
      ];
      for (const call of calls) await expect(call()).rejects.toBeInstanceOf(StoreError);
    } finally {
      await own.close();
    }
  });
});
