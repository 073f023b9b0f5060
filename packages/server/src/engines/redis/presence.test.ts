import type { Member } from '@realtime/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { presenceContract } from '../contract/presence.contract.js';
import { StoreError } from '../store-error.js';
import type { Departure, PresenceStore } from '../types.js';
import { RedisClient, type Script } from './client.js';
import { type RedisPresenceOptions, RedisPresenceStore } from './presence.js';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.close();
});

presenceContract(
  'RedisPresenceStore, two nodes',
  async ({ offlineDelayMs }) => {
    const prefix = uniquePrefix('presence');
    const clients = [
      await RedisClient.open({ url: redis.url, prefix }),
      await RedisClient.open({ url: redis.url, prefix }),
    ];
    return {
      // The suite moves time by hand: leases are timed by the callers' (one) clock.
      store: new RedisPresenceStore(clients[0] as RedisClient, { offlineDelayMs, leaseClock: 'caller' }),
      // Another node on the same Redis, with its own connection.
      peer: new RedisPresenceStore(clients[1] as RedisClient, { offlineDelayMs, leaseClock: 'caller' }),
      cleanup: async () => {
        for (const client of clients) await client.close();
      },
    };
  },
  { leases: true },
);

const T0 = 1_700_000_000_000;
const DELAY = 10_000;
const LEASE = 15_000;
const CLAIM = 30_000;

describe('RedisPresenceStore sweeps', () => {
  const clients: RedisClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });

  async function open(prefix: string, options: RedisPresenceOptions = {}): Promise<RedisPresenceStore> {
    const client = await RedisClient.open({ url: redis.url, prefix });
    clients.push(client);
    return new RedisPresenceStore(client, {
      offlineDelayMs: DELAY,
      sweepClaimMs: CLAIM,
      leaseClock: 'caller',
      ...options,
    });
  }

  /**
   * A sweeper whose connection drops once its first chunk was answered, as a node that dies mid-sweep:
   * a real disconnect, so its next script fails as with any lost Redis.
   */
  async function openDying(prefix: string, options: RedisPresenceOptions): Promise<RedisPresenceStore> {
    const client = await RedisClient.open({ url: redis.url, prefix });
    clients.push(client);
    const dying = new Proxy(client, {
      get(target, name) {
        if (name === 'script') {
          return (scriptName: string, lua: string): Script => {
            const run = target.script(scriptName, lua);
            if (scriptName !== 'rtPresenceSweep') return run;
            return async (keys, args) => {
              const reply = await run(keys, args);
              target.redis.disconnect();
              return reply;
            };
          };
        }
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return new RedisPresenceStore(dying, {
      offlineDelayMs: DELAY,
      sweepClaimMs: CLAIM,
      leaseClock: 'caller',
      ...options,
    });
  }

  const texts = (departures: readonly Departure[]) => departures.map((d) => JSON.stringify(d)).sort();

  /** `count` pages of node `na`, each its own user in a room of its own and a presence room of its own. */
  async function deadNode(store: PresenceStore, count: number): Promise<Departure[]> {
    await store.renew('na', T0, LEASE);
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

  it("times leases by Redis's clock: a node whose clock is behind by more than a lease is not swept", async () => {
    const prefix = uniquePrefix('clocks');
    // The production default: no caller clock for leases.
    const behind = await open(prefix, { leaseClock: 'redis' });
    const ahead = await open(prefix, { leaseClock: 'redis' });
    const now = Date.now();
    // Node na's clock is 2 leases behind node nb's; both renew on time, by their own clocks.
    expect(await behind.renew('na', now - 2 * LEASE, LEASE)).toBe(false);
    await behind.pageOpened('app1', 'ann', 'na.1', now - 2 * LEASE);
    await behind.enterRoom('app1', 'lobby', 'na.1');
    await ahead.renew('nb', now, LEASE);
    expect(await ahead.sweep(now, 'nb')).toEqual([]);
    expect(await behind.renew('na', now - 2 * LEASE, LEASE)).toBe(true);
    expect(await ahead.occupiedRooms('app1', { limit: 10 })).toEqual({
      rooms: [{ room: 'lobby', pages: 1, members: 0 }],
      more: false,
    });
    // Nor does a clock far ahead make the other node's lease look ended.
    expect(await ahead.sweep(now + 10 * LEASE, 'nb')).toEqual([]);
    expect(await behind.renew('na', now - 2 * LEASE, LEASE)).toBe(true);
  });

  it('has a node whose lease ended swept by exactly one of two sweepers, each departure once, its users then due', async () => {
    const prefix = uniquePrefix('sweep');
    const store = await open(prefix, { sweepChunk: 3 });
    const peer = await open(prefix, { sweepChunk: 3 });
    const expected = await deadNode(store, 20);
    const now = T0 + LEASE;
    const [first, second] = await Promise.all([store.sweep(now, 'ns'), peer.sweep(now, 'ns')]);
    // One claimed the node and swept all of it, chunk after chunk; the other found it claimed.
    expect([first, second].filter((answer) => answer?.length === 0)).toHaveLength(1);
    expect(texts([...(first ?? []), ...(second ?? [])])).toEqual(texts(expected));
    expect(await store.sweep(now + 10 * CLAIM, 'ns')).toEqual([]);
    const users = Array.from({ length: 20 }, (_, i) => `u${i}`);
    expect(await peer.online('app1', users, now + DELAY - 1)).toEqual(users.map(() => true));
    expect(await peer.userPages('app1', 'u0')).toBe(0);
    expect(await peer.takeOffline(now + DELAY - 1, 100)).toEqual([]);
    const gone = await peer.takeOffline(now + DELAY, 100);
    expect(gone.map((g) => g.user).sort()).toEqual([...users].sort());
  });

  it('has a node half swept by a sweeper that died finished by a later sweep, no departure twice', async () => {
    const prefix = uniquePrefix('sweep');
    const dying = await openDying(prefix, { sweepChunk: 2 });
    const peer = await open(prefix, { sweepChunk: 2 });
    const expected = await deadNode(peer, 7);
    const now = T0 + LEASE;
    // Its first chunk is answered (what it took is its to report); its next step fails.
    const partial = await dying.sweep(now, 'ns');
    expect(partial).toHaveLength(4);
    await expect(dying.sweep(now, 'ns')).rejects.toBeInstanceOf(StoreError);
    // The dead sweeper's claim holds the rest until it ends.
    expect(await peer.sweep(now, 'ns')).toEqual([]);
    expect(await peer.sweep(now + CLAIM - 1, 'ns')).toEqual([]);
    const rest = await peer.sweep(now + CLAIM, 'ns');
    expect(rest).toHaveLength(expected.length - partial.length);
    expect(texts([...partial, ...rest])).toEqual(texts(expected));
    expect(await peer.sweep(now + 10 * CLAIM, 'ns')).toEqual([]);
    // Every user is due, from the sweep that took their page.
    expect((await peer.takeOffline(now + CLAIM + DELAY, 100)).map((g) => g.user).sort()).toEqual(
      Array.from({ length: 7 }, (_, i) => `u${i}`).sort(),
    );
  });

  it('never sweeps a node that keeps renewing, while a silent one goes', async () => {
    const prefix = uniquePrefix('sweep');
    const alive = await open(prefix);
    const sweeper = await open(prefix);
    await alive.renew('nk', T0, LEASE);
    await alive.renew('nd', T0, LEASE);
    await alive.pageOpened('app1', 'ann', 'nk.1', T0);
    await alive.enterRoom('app1', 'lobby', 'nk.1');
    await alive.joinRoom('app1', 'lobby', { user: 'ann' }, 'nk.1');
    await alive.pageOpened('app1', 'bob', 'nd.1', T0);
    await alive.enterRoom('app1', 'lobby', 'nd.1');
    await alive.joinRoom('app1', 'lobby', { user: 'bob' }, 'nd.1');
    await alive.pageOpened('app1', 'ann', 'nd.2', T0);
    expect(await sweeper.userPages('app1', 'ann')).toBe(2);
    const departures: Departure[] = [];
    for (let now = T0; now <= T0 + 50 * LEASE; now += 1000) {
      if ((now - T0) % 5000 === 0) await alive.renew('nk', now, LEASE);
      departures.push(...(await sweeper.sweep(now, 'ns')));
    }
    expect(departures).toEqual([{ type: 'member.left', app: 'app1', room: 'lobby', member: { user: 'bob' } }]);
    expect(await sweeper.members('app1', 'lobby')).toEqual([{ user: 'ann' }]);
    expect(await sweeper.online('app1', ['ann', 'bob'], T0 + 50 * LEASE)).toEqual([true, false]);
    expect(await sweeper.userPages('app1', 'ann')).toBe(1);
    expect(await sweeper.exitRoom('app1', 'lobby', 'nk.1')).toBe(true);
  });

  it("lists a node's pages in bounded SSCAN steps, each page once, never one SMEMBERS of them all", async () => {
    const prefix = uniquePrefix('node-pages');
    const store = await open(prefix);
    const pages = Array.from({ length: 1500 }, (_, i) => `na.${i}`);
    for (const page of pages) await store.enterRoom('app1', 'lobby', page);
    const client = clients.at(-1) as RedisClient;
    await client.call((r) => r.config('RESETSTAT'));
    expect((await store.nodePages('na')).sort()).toEqual([...pages].sort());
    const stats = await client.call((r) => r.info('commandstats'));
    expect(stats).not.toMatch(/cmdstat_smembers:/);
    expect(Number(/cmdstat_sscan:calls=(\d+)/.exec(stats)?.[1] ?? 0)).toBeGreaterThan(1);
  });

  it('answers StoreErrors, not hangs, when Redis is gone', async () => {
    const own = await startRedis();
    try {
      const client = await RedisClient.open({ url: own.url, prefix: uniquePrefix('down'), commandTimeoutMs: 500 });
      clients.push(client);
      const store = new RedisPresenceStore(client);
      await store.renew('na', T0, LEASE);
      await own.stop();
      const calls: Array<() => Promise<unknown>> = [
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
        () => store.renew('na', T0, LEASE),
        () => store.sweep(T0 + LEASE, 'ns'),
      ];
      for (const call of calls) await expect(call()).rejects.toBeInstanceOf(StoreError);
    } finally {
      await own.close();
    }
  });
});
