import type { Logger } from 'pino';
import { asyncEngine } from './async-engine.js';
import { type EmbeddedStores, openEmbeddedEngine } from './embedded.js';
import type { RedisTarget } from './redis/client.js';
import type { Engine } from './types.js';

/**
 * Which engine a server runs on: embedded (one process, the SQLite file in the data folder) or
 * Redis (any number of nodes on one Redis, `url`, or on a Redis Cluster, `cluster`: its seed URLs). `asyncStores` (tests) makes every embedded store call
 * answer on a later turn, so the networked paths run without Redis.
 */
export type EngineChoice =
  | { kind: 'embedded'; asyncStores?: boolean }
  | ({ kind: 'redis'; prefix?: string } & RedisTarget);

export interface EngineSettings {
  /** The embedded engine's folder. */
  dataDir: string;
  log: Logger;
  offlineDelayMs?: number;
  /** Embedded engine only: wraps its SQLite stores (tests inject failures). */
  wrapStores?: (stores: EmbeddedStores) => Partial<EmbeddedStores>;
}

/** The one place engines are made: lifecycle, CLI and the development app open them here. */
export async function openEngine(choice: EngineChoice, settings: EngineSettings): Promise<Engine> {
  if (choice.kind === 'redis') {
    // Loaded here, not at the top: the embedded engine never evaluates ioredis.
    const { openRedisEngine } = await import('./redis/engine.js');
    return openRedisEngine({
      ...(choice.cluster === undefined ? { url: choice.url } : { cluster: choice.cluster }),
      log: settings.log,
      ...(choice.prefix === undefined ? {} : { prefix: choice.prefix }),
      ...(settings.offlineDelayMs === undefined ? {} : { offlineDelayMs: settings.offlineDelayMs }),
    });
  }
  const engine = openEmbeddedEngine(settings);
  return choice.asyncStores ? asyncEngine(engine) : engine;
}
