import { StoreError } from '../engines/store-error.js';
import type { App, AppStore, SecretRotation } from '../engines/types.js';

interface Entry {
  app: App | undefined;
  at: number;
}

/**
 * Keeps apps read from a store for a short time: the store is read on every API request otherwise
 * (a fifth of a request's CPU with SQLite). Writes through this object apply at once; writes from
 * another process (the CLI) or node apply within `ttlMs` (a second): a secret rotated or retired
 * there too. A rotation's window ends by the clock, not by a write, so its end needs no read.
 */
export class CachedAppStore implements AppStore {
  readonly #store: AppStore;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  readonly #maxEntries: number;
  readonly #staleMs: number;

  /**
   * `staleMs` (a Redis Cluster: 60 s): how long an app read before may stand in while the store does
   * not answer (the shard holding the apps failing over), so requests for rooms of the other shards
   * go on; a change made meanwhile by another node applies once the store answers again. 0 (one
   * Redis, embedded, where nothing else answers either): such a read fails as the store did.
   */
  constructor(
    store: AppStore,
    options: { ttlMs?: number; now?: () => number; maxEntries?: number; staleMs?: number } = {},
  ) {
    this.#store = store;
    this.#staleMs = options.staleMs ?? 0;
    this.#ttlMs = options.ttlMs ?? 1000;
    this.#now = options.now ?? Date.now;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  get(key: string): App | undefined | Promise<App | undefined> {
    const now = this.#now();
    const entry = this.#entries.get(key);
    if (entry && now - entry.at < this.#ttlMs) return entry.app;
    const found = this.#store.get(key);
    if (found instanceof Promise) {
      return found.then(
        (app) => this.#remember(key, app, now),
        (error: unknown) => {
          if (entry && now - entry.at < this.#staleMs && error instanceof StoreError && error.kind === 'unavailable') {
            return entry.app;
          }
          throw error;
        },
      );
    }
    return this.#remember(key, found, now);
  }

  #remember(key: string, app: App | undefined, at: number): App | undefined {
    // Unknown keys are remembered too, so a flood of bad keys costs no store reads; the bound keeps it small.
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
    this.#entries.set(key, { app, at });
    return app;
  }

  list(): App[] | Promise<App[]> {
    return this.#store.list();
  }

  async upsert(app: App): Promise<void> {
    await this.#store.upsert(app);
    this.#entries.delete(app.key);
  }

  async setSecret(key: string, secret: string, rotation?: SecretRotation, ifSecret?: string): Promise<boolean> {
    const done = await this.#store.setSecret(key, secret, rotation, ifSecret);
    this.#entries.delete(key);
    return done;
  }

  async setWebhook(key: string, url: string): Promise<boolean> {
    const done = await this.#store.setWebhook(key, url);
    this.#entries.delete(key);
    return done;
  }

  async remove(key: string): Promise<boolean> {
    const done = await this.#store.remove(key);
    this.#entries.delete(key);
    return done;
  }

  close(): void | Promise<void> {
    this.#entries.clear();
    return this.#store.close();
  }
}
