/**
 * The one place that makes Redis connections for the engine. Every call is bounded: no offline
 * queue (a command while disconnected fails at once), a command timeout, in-flight commands failed
 * (not resent) when the connection drops, reconnects with capped backoff. Every failure becomes a
 * StoreError (`full` for Redis out of memory, else `unavailable`), so callers answer 503 and never hang.
 *
 * Keys are prefixed by hand (not ioredis' keyPrefix): scripts build no key names, SCAN patterns and
 * pub/sub channels need the prefix too, and one rule for all is easier to check.
 */
import { randomBytes } from 'node:crypto';
import calculateSlot, { generateMulti } from 'cluster-key-slot';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { StoreError } from '../store-error.js';
import { checkGeneration, shardGenerations } from './generation.js';

/** One Redis (`url`), or a Redis Cluster by its seed nodes (`cluster`): exactly one of them. */
export type RedisTarget = { url: string; cluster?: undefined } | { cluster: readonly string[]; url?: undefined };

export type RedisClientOptions = RedisTarget & {
  /** Put before every key and channel, so several services (or tests) share one Redis. Default `rt:`. */
  prefix?: string;
  /** How long one command may take before it fails as unavailable. Default 2000 ms. */
  commandTimeoutMs?: number;
  /** How long `open` waits for the first connection. Default 10 s. */
  startTimeoutMs?: number;
  /** How often the generation is confirmed while connected. Default 5 s. */
  generationCheckMs?: number;
  /**
   * Refuse a script whose keys span several cluster slots, even on one Redis (which would run it),
   * so single-Redis tests catch a script that a Redis Cluster would refuse with CROSSSLOT.
   */
  checkSlots?: boolean;
};

export type RedisArg = string | number | Buffer;

/** The connection commands go through: one Redis, or a Redis Cluster routing each command by its key's slot. */
export type RedisConnection = Redis | Cluster;

/** A Lua script: EVALSHA, loaded by EVAL the first time on each connection (ioredis' defineCommand). */
export type Script = (keys: readonly string[], args: readonly RedisArg[]) => Promise<unknown>;

/** Redis refused the write for lack of memory (maxmemory reached); everything else is `unavailable`. */
export function toStoreError(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreError(/\bOOM\b/.test(message) ? 'full' : 'unavailable', { cause: error });
}

/** Reconnect after 50, 100, 200 ... ms, never waiting more than a second. */
const retryStrategy = (times: number): number => Math.min(50 * 2 ** Math.min(times - 1, 10), 1000);

export function connectionOptions(commandTimeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 1000),
    // 0: commands in flight fail as soon as the connection drops (never resent to a Redis that may
    // have restarted in between), and the caller learns of it at once.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy,
  };
}

/** `host`, `port` and credentials of a `redis://` URL, for the cluster's seed list. */
function seedOf(url: string): { host: string; port: number; username?: string; password?: string; tls: boolean } {
  const parsed = new URL(url);
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    tls: parsed.protocol === 'rediss:',
  };
}

export function clusterOptions(seeds: readonly string[], commandTimeoutMs: number): ClusterOptions {
  const first = seedOf(seeds[0] ?? 'redis://127.0.0.1:6379');
  const { lazyConnect: _lazy, retryStrategy: _retry, ...perNode } = connectionOptions(commandTimeoutMs);
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    // Writes and reads on primaries only: a replica may be behind, and ids must rise.
    scaleReads: 'master',
    // A command during a failover is retried on the refreshed slot map a few times, then fails as
    // unavailable (about a second), so callers answer 503 rather than hang.
    maxRedirections: 8,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    retryDelayOnMoved: 0,
    slotsRefreshTimeout: Math.max(commandTimeoutMs, 1000),
    slotsRefreshInterval: 2000,
    clusterRetryStrategy: retryStrategy,
    redisOptions: {
      ...perNode,
      ...(first.username ? { username: first.username } : {}),
      ...(first.password ? { password: first.password } : {}),
      ...(first.tls ? { tls: {} } : {}),
    },
  };
}

/** How many primaries own slots in the cluster's slot map (some may have no connection yet). */
function primariesInSlotMap(cluster: Cluster): number {
  const owners = new Set<string>();
  for (const slot of cluster.slots) {
    const owner = slot?.[0];
    if (owner !== undefined) owners.add(owner);
  }
  return owners.size;
}

export class RedisClient {
  readonly redis: RedisConnection;
  /** True on a Redis Cluster: scripts publish with SPUBLISH, SCAN runs per primary. */
  readonly cluster: boolean;
  /** The URLs connected to: the one Redis, or the cluster's seed nodes. */
  readonly seeds: readonly string[];
  readonly prefix: string;
  readonly #options: Required<Omit<RedisClientOptions, 'url' | 'cluster' | 'prefix'>>;
  /** The generation confirmed on the current connection; undefined until then. */
  #gen: string | undefined;
  /** Counts connections, so a check that finishes after its connection dropped is not used. */
  #connection = 0;
  #checking: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  readonly #waiting = new Set<() => void>();
  /** The generation of the connection before, to tell a new one (Redis lost data) from a reconnect. */
  #lastGen: string | undefined;
  readonly #onNewGeneration = new Set<() => Promise<void>>();
  readonly #scripts = new Map<string, Script>();
  readonly #epochBase = randomBytes(6).toString('base64url');
  #epochs = 0;
  #closed = false;
  /** A change of the slot map came while shards were being confirmed: confirm again after. */
  #again = false;
  /** On a cluster: the last confirmation left out a primary that did not answer. */
  #partial = false;

  private constructor(options: RedisClientOptions) {
    this.prefix = options.prefix ?? 'rt:';
    if (this.prefix.includes('{') || this.prefix.includes('}')) {
      throw new Error('the Redis key prefix must not hold { or }: they decide cluster slots');
    }
    this.#options = {
      commandTimeoutMs: options.commandTimeoutMs ?? 2000,
      startTimeoutMs: options.startTimeoutMs ?? 10_000,
      generationCheckMs: options.generationCheckMs ?? 5000,
      checkSlots: options.checkSlots ?? false,
    };
    if (options.cluster !== undefined) {
      if (options.cluster.length === 0) throw new Error('a Redis Cluster needs at least one seed URL');
      this.cluster = true;
      this.seeds = [...options.cluster];
      const nodes = this.seeds.map((url) => ({ host: seedOf(url).host, port: seedOf(url).port }));
      this.redis = new Cluster(nodes, clusterOptions(this.seeds, this.#options.commandTimeoutMs));
      // Shards fail and come back one by one: their generations are confirmed again on every change
      // of the slot map, and a shard not confirmed answers unavailable alone (see generation.ts).
      for (const event of ['ready', 'refresh', '+node', '-node']) this.redis.on(event, () => this.#confirm());
    } else {
      this.cluster = false;
      this.seeds = [options.url];
      this.redis = new Redis(options.url, connectionOptions(this.#options.commandTimeoutMs));
      this.redis.on('close', () => {
        this.#connection++;
        this.#gen = undefined;
      });
      this.redis.on('ready', () => this.#confirm());
    }
    // Errors also reach the commands that failed; the event must have a listener or it throws.
    this.redis.on('error', () => {});
    this.redis.on('node error', () => {});
  }

  /** Connects and confirms the generation; rejects with a StoreError when Redis does not answer in time. */
  static async open(options: RedisClientOptions): Promise<RedisClient> {
    const client = new RedisClient(options);
    client.redis.connect().catch(() => {
      // Retried by the retry strategy; `open` fails below if it never succeeds.
    });
    try {
      await client.ready();
    } catch (error) {
      await client.close();
      throw error;
    }
    client.#timer = setInterval(() => {
      if (client.#gen !== undefined || client.cluster) client.#confirm();
    }, client.#options.generationCheckMs);
    client.#timer.unref();
    return client;
  }

  /** A new connection to the one Redis with the same bounds (the broker's subscriber). */
  duplicate(): Redis {
    const [url] = this.seeds;
    if (this.cluster || url === undefined)
      throw new Error('duplicate() is for one Redis: a cluster subscribes per shard');
    const copy = new Redis(url, connectionOptions(this.#options.commandTimeoutMs));
    copy.on('error', () => {});
    return copy;
  }

  key(name: string): string {
    return this.prefix + name;
  }

  /** The generation to write under; unavailable until it was confirmed after the last (re)connect. */
  get generation(): string {
    if (this.#gen === undefined || this.#closed) throw new StoreError('unavailable');
    return this.#gen;
  }

  /** An epoch no room ever had: random per process, then counted. */
  newEpoch(): string {
    return `${this.#epochBase}${(this.#epochs++).toString(36)}`;
  }

  /** Defines a script once per client; calls map their errors to StoreErrors. */
  script(name: string, lua: string): Script {
    const known = this.#scripts.get(name);
    if (known) return known;
    this.redis.defineCommand(name, { lua });
    const command = (this.redis as unknown as Record<string, (...args: RedisArg[]) => Promise<unknown>>)[name];
    if (!command) throw new Error(`script ${name} was not defined`);
    const checkSlots = this.#options.checkSlots;
    const run: Script = (keys, args) => {
      if (checkSlots && keys.length > 1 && generateMulti(keys) < 0) {
        return Promise.reject(
          new Error(`CROSSSLOT: script ${name} was given keys of several slots: ${keys.join(' ')}`),
        );
      }
      return command.call(this.redis, keys.length, ...keys, ...args).catch((error: unknown) => {
        // A shard whose generation this node has not confirmed (a new primary): confirm, answer unavailable.
        if (this.cluster && error instanceof Error && error.message.includes('UNCONFIRMED')) this.#confirm();
        throw toStoreError(error);
      });
    };
    this.#scripts.set(name, run);
    return run;
  }

  /** Runs plain commands, their errors mapped to StoreErrors. */
  async call<T>(run: (redis: RedisConnection) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreError('unavailable');
    try {
      return await run(this.redis);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * Runs `repair` when a (re)connect finds a new generation (Redis lost data, or may have), before
   * the client serves again; a failing repair is tried again with the next check. Answers a function
   * that removes it.
   */
  onNewGeneration(repair: () => Promise<void>): () => void {
    this.#onNewGeneration.add(repair);
    return () => this.#onNewGeneration.delete(repair);
  }

  /**
   * Runs `run` on every primary (on one Redis: once, on the one connection): SCAN and other
   * commands that see one node's keys only. Errors mapped to StoreErrors.
   */
  async forEachPrimary<T>(run: (redis: Redis) => Promise<T>): Promise<T[]> {
    if (this.#closed) throw new StoreError('unavailable');
    try {
      if (!(this.redis instanceof Cluster)) return [await run(this.redis)];
      const primaries = this.redis.nodes('master');
      if (primaries.length === 0) throw new StoreError('unavailable', { message: 'no Redis Cluster primary is known' });
      return await Promise.all(primaries.map(run));
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * On a cluster whose primary for `key` has a replica: waits, at most `timeoutMs`, until a replica
   * has every write this node sent that primary (WAIT on the connection the writes went through), so
   * a failover right after loses none of them. Answers whether one did; true at once elsewhere (one
   * Redis, a shard without replicas: nothing to wait for).
   */
  async replicated(key: string, timeoutMs = 1000): Promise<boolean> {
    if (!(this.redis instanceof Cluster)) return true;
    const owners = this.redis.slots[calculateSlot(key)];
    const [primary] = owners ?? [];
    if (primary === undefined || (owners?.length ?? 0) < 2) return true;
    const node = this.redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === primary);
    if (!node) return false;
    try {
      return Number(await node.call('WAIT', 1, timeoutMs)) >= 1;
    } catch {
      return false;
    }
  }

  /** A round trip, and the generation confirmed: the readiness probe. */
  async check(): Promise<void> {
    await this.call((redis) => redis.ping());
    void this.generation;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const wake of this.#waiting) wake();
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  #confirm(): void {
    if (this.redis instanceof Cluster) {
      this.#confirmShards(this.redis);
      return;
    }
    if (this.#checking || this.#closed) return;
    const connection = this.#connection;
    this.#checking = checkGeneration(this.redis, this.key('gen'), randomBytes(9).toString('base64url'))
      .then(async (gen) => {
        if (connection !== this.#connection || this.#closed) return;
        if (this.#lastGen !== undefined && gen !== this.#lastGen) {
          // Redis may have lost data: what must be there is put back before anything is served.
          for (const repair of this.#onNewGeneration) await repair();
        }
        if (connection !== this.#connection || this.#closed) return;
        this.#lastGen = gen;
        this.#gen = gen;
        for (const wake of this.#waiting) wake();
      })
      .catch(() => {
        // Not confirmed: stay unavailable; the next ready event or timer tick tries again.
        if (connection === this.#connection && this.redis.status === 'ready') {
          setTimeout(() => this.#confirm(), 200).unref();
        }
      })
      .finally(() => {
        this.#checking = undefined;
        // A reconnect during the check: confirm the new connection too.
        if (connection !== this.#connection && this.redis.status === 'ready') this.#confirm();
      });
  }

  /**
   * On a cluster the generation lists every primary that answered, with its incarnation
   * (generation.ts); a shard that did not answer is left out, so only its slots answer unavailable.
   * A primary new to the list (failover, restart) runs the repairs, as a new generation does.
   */
  #confirmShards(cluster: Cluster): void {
    if (this.#closed) return;
    if (this.#checking) {
      this.#again = true;
      return;
    }
    this.#again = false;
    const primaries = cluster.nodes('master');
    this.#checking = shardGenerations(primaries)
      .then(async (entries) => {
        // Before 'ready' the cluster refuses commands: confirmed on its ready event.
        if (this.#closed || entries.length === 0 || cluster.status !== 'ready') return;
        const before = this.#lastGen;
        const gen = `@ ${entries.join(' ')} `;
        if (before !== undefined && entries.some((entry) => !before.includes(` ${entry} `))) {
          for (const repair of this.#onNewGeneration) await repair();
        }
        this.#lastGen = gen;
        this.#gen = gen;
        // A primary that did not answer (a connection not up yet, a shard failing over) is asked
        // again soon: until then its scripts answer UNCONFIRMED and its slots are unavailable.
        this.#partial = entries.length < Math.max(primaries.length, primariesInSlotMap(cluster));
        if (this.#partial) this.#again = true;
        else for (const wake of this.#waiting) wake();
      })
      .catch(() => {
        // Kept as it was: the next slot-map change, timer tick or UNCONFIRMED reply tries again.
      })
      .finally(() => {
        this.#checking = undefined;
        if (this.#again && !this.#closed) setTimeout(() => this.#confirm(), this.#partial ? 100 : 50).unref();
      });
  }

  /**
   * Answers once the generation is confirmed on a connection (after a Redis restart: once
   * reconnected). On a cluster, once every primary answered; at the deadline, with those that did
   * (the others' slots answer unavailable until they do), or an error when none did.
   */
  async ready(timeoutMs = this.#options.startTimeoutMs): Promise<void> {
    if (this.#gen !== undefined && !this.#partial) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(wake);
        if (this.#gen !== undefined && !this.#closed) resolve();
        else reject(new StoreError('unavailable', { message: `Redis did not answer within ${timeoutMs} ms` }));
      }, timeoutMs);
      const wake = (): void => {
        clearTimeout(timer);
        this.#waiting.delete(wake);
        if (this.#closed) reject(new StoreError('unavailable'));
        else resolve();
      };
      this.#waiting.add(wake);
    });
  }
}
