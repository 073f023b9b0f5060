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
import { generateMulti } from 'cluster-key-slot';
import { Redis, type RedisOptions } from 'ioredis';
import { StoreError } from '../store-error.js';
import { checkGeneration } from './generation.js';

export interface RedisClientOptions {
  /** `redis://[user:pass@]host:port[/db]`. */
  url: string;
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
}

export type RedisArg = string | number | Buffer;

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

export class RedisClient {
  readonly redis: Redis;
  readonly prefix: string;
  readonly #options: Required<Omit<RedisClientOptions, 'url' | 'prefix'>> & { url: string };
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

  private constructor(options: RedisClientOptions) {
    this.prefix = options.prefix ?? 'rt:';
    this.#options = {
      url: options.url,
      commandTimeoutMs: options.commandTimeoutMs ?? 2000,
      startTimeoutMs: options.startTimeoutMs ?? 10_000,
      generationCheckMs: options.generationCheckMs ?? 5000,
      checkSlots: options.checkSlots ?? false,
    };
    this.redis = new Redis(options.url, connectionOptions(this.#options.commandTimeoutMs));
    // Errors also reach the commands that failed; the event must have a listener or it throws.
    this.redis.on('error', () => {});
    this.redis.on('close', () => {
      this.#connection++;
      this.#gen = undefined;
    });
    this.redis.on('ready', () => this.#confirm());
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
      if (client.#gen !== undefined) client.#confirm();
    }, client.#options.generationCheckMs);
    client.#timer.unref();
    return client;
  }

  /** A new connection with the same bounds (the broker's subscriber). */
  duplicate(): Redis {
    const copy = new Redis(this.#options.url, connectionOptions(this.#options.commandTimeoutMs));
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
        throw toStoreError(error);
      });
    };
    this.#scripts.set(name, run);
    return run;
  }

  /** Runs plain commands, their errors mapped to StoreErrors. */
  async call<T>(run: (redis: Redis) => Promise<T>): Promise<T> {
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

  /** Answers once the generation is confirmed on a connection (after a Redis restart: once reconnected). */
  async ready(timeoutMs = this.#options.startTimeoutMs): Promise<void> {
    if (this.#gen !== undefined) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(wake);
        reject(new StoreError('unavailable', { message: `Redis did not answer within ${timeoutMs} ms` }));
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
