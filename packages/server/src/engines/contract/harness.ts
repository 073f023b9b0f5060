/**
 * What the call, group and stream store contracts (and their runner files) share: stores for two
 * nodes on one backing, made fresh for each test and cleaned up after it; the clock they pass by
 * hand; and the helpers that race the two nodes against each other.
 *
 * A backing is one of `inProcess` (one store, its state shared by both nodes), `answeringLater`
 * (the embedded engine's store seen through asyncEngine) or `redisNodes` (one prefix, a client per node).
 *
 * @example
 * ```ts
 * callStoreContract('MemoryCallStore', inProcess(() => new MemoryCallStore()));
 * ```
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { redisTarget, type TestRedis, uniquePrefix } from '../../../test/redis-server.js';
import { startTestRedis } from '../../../test/test-redis.js';
import { asyncEngine } from '../async-engine.js';
import { openEmbeddedEngine } from '../embedded.js';
import { RedisClient } from '../redis/client.js';
import type { Engine } from '../types.js';

/** The time every suite starts from; the stores never read a clock, so tests move it by hand. */
export const T0 = 1_700_000_000_000;
export const DAY = 24 * 3600_000;

/** One backing's stores for a test. */
export interface StoreHarness<S> {
  /** A store with nothing in it (and no node lease). */
  store: S;
  /**
   * A second store on the same backing, as on another node: what either is told counts for both.
   * Engines of one process leave it out; the tests then use `store` for both sides.
   */
  peer?: S;
  /** Closes the stores and removes whatever they kept. */
  cleanup(): Promise<void>;
}

export type MakeStores<S> = () => Promise<StoreHarness<S>>;

/** The stores of two nodes on one backing. */
export interface TwoNodes<S> {
  store: S;
  peer: S;
  /** Racer `i`'s node: `store` for even `i`, `peer` for odd, so racers split over both nodes. */
  node(i: number): S;
}

export const twoNodes = <S>(store: S, peer: S): TwoNodes<S> => ({
  store,
  peer,
  node: (i) => (i % 2 ? peer : store),
});

/**
 * Fresh stores for each test of the enclosing describe, cleaned up after it. Call inside a describe.
 * `nodes()` answers the two nodes' stores, `store()` the first alone.
 */
export function freshStores<S>(make: MakeStores<S>): { nodes(): Promise<TwoNodes<S>>; store(): Promise<S> } {
  const open: StoreHarness<S>[] = [];
  afterEach(async () => {
    for (const harness of open.splice(0)) await harness.cleanup();
  });
  const nodes = async (): Promise<TwoNodes<S>> => {
    const harness = await make();
    open.push(harness);
    return twoNodes(harness.store, harness.peer ?? harness.store);
  };
  return { nodes, store: async () => (await nodes()).store };
}

/** `count` racers at once, racer `i` on `node(i)` (TwoNodes.node); their answers in racer order. */
export function race<S, R>(
  node: (i: number) => S,
  count: number,
  step: (store: S, i: number) => R | PromiseLike<R>,
): Promise<R[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => step(node(i), i)));
}

/** Every item at once, item `i` on `node(i)` (TwoNodes.node); the answers in item order. */
export function raceEach<S, T, R>(
  node: (i: number) => S,
  items: readonly T[],
  step: (store: S, item: T, i: number) => R | PromiseLike<R>,
): Promise<R[]> {
  return Promise.all(items.map((item, i) => step(node(i), item, i)));
}

/**
 * What racers left behind, as later sweeps take it: batches of `take` until one comes back empty.
 * Bounded: a store that never runs dry fails the test rather than hanging it.
 */
export async function drain<T>(take: () => readonly T[] | PromiseLike<readonly T[]>, rounds = 100): Promise<T[]> {
  const taken: T[] = [];
  for (let round = 0; round < rounds; round++) {
    const batch = await take();
    if (batch.length === 0) return taken;
    taken.push(...batch);
  }
  throw new Error(`still taking after ${rounds} batches`);
}

/** Engines of one process: one store, whose state both nodes share. */
export const inProcess =
  <S>(make: () => S): MakeStores<S> =>
  async () => ({ store: make(), cleanup: async () => {} });

/**
 * The embedded engine's store in a fresh folder with every call answering on a later turn
 * (asyncEngine), so racing calls interleave as they would over a network.
 */
export const answeringLater =
  <S>(name: string, pick: (engine: Engine) => S): MakeStores<S> =>
  async () => {
    const dir = mkdtempSync(join(tmpdir(), `realtime-async-${name}-`));
    const engine = openEmbeddedEngine({ dataDir: dir, log: pino({ level: 'silent' }) });
    return {
      store: pick(asyncEngine(engine)),
      cleanup: async () => {
        await engine.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  };

/** A real redis-server for the file's tests, started before them and stopped after. */
export function useRedis(): () => TestRedis {
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });
  return () => {
    if (!redis) throw new Error('redis-server is not up yet: use it inside a test');
    return redis;
  };
}

/** Two nodes on one Redis: one prefix, a client (a connection) per node. */
export const redisNodes =
  <S>(redis: () => TestRedis, name: string, make: (client: RedisClient) => S): MakeStores<S> =>
  async () => {
    const prefix = uniquePrefix(name);
    const clients = [
      await RedisClient.open({ ...redisTarget(redis()), prefix, checkSlots: true }),
      await RedisClient.open({ ...redisTarget(redis()), prefix, checkSlots: true }),
    ] as const;
    return {
      store: make(clients[0]),
      peer: make(clients[1]),
      cleanup: async () => {
        for (const client of clients) await client.close();
      },
    };
  };

/**
 * A store on a prefix of its own for tests that look at its Redis keys, with the client under it;
 * closed after each test. Call inside a describe.
 */
export function redisKeys<S>(redis: () => TestRedis, name: string, make: (client: RedisClient) => S) {
  const clients: RedisClient[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close();
  });
  return {
    async open(): Promise<{ client: RedisClient; store: S }> {
      const client = await RedisClient.open({ ...redisTarget(redis()), prefix: uniquePrefix(name), checkSlots: true });
      clients.push(client);
      return { client, store: make(client) };
    },
    /** Every key under the client's prefix (on every primary of a cluster), unsorted. */
    keys: async (client: RedisClient) => (await client.forEachPrimary((r) => r.keys(`${client.prefix}*`))).flat(),
    /** Milliseconds left of key `name` (-1: none set, -2: no such key). */
    pttl: (client: RedisClient, key: string) => client.call((r) => r.pttl(client.key(key))),
  };
}
