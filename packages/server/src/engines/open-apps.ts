import type { EngineChoice } from './open-engine.js';
import type { RedisTarget } from './redis/client.js';
import { SqliteAppStore } from './sqlite/apps.js';
import { openDb } from './sqlite/db.js';
import type { AppStore } from './types.js';

/** Where the apps are: an engine choice, or the Redis a Redis engine keeps them in. */
export type AppStoreChoice =
  | EngineChoice
  | ({
      kind: 'redis';
      prefix?: string;
      /** How long to wait for Redis to answer at first (the client's default when left out). */
      startTimeoutMs?: number;
    } & RedisTarget);

/** An app store opened alone, and how to let it go. */
export interface OpenedApps {
  apps: AppStore;
  close(): Promise<void>;
}

/**
 * Opens only the apps of an engine, for tools that need nothing else (the CLI's `apps` commands, the
 * development app). Opening a whole engine would do more than read: the embedded engine takes the
 * pending offline reports out of its file, which a CLI run beside a running server must not.
 * Throws what the storage throws when it cannot be opened (a folder that is a file, a locked file;
 * a StoreError when Redis does not answer).
 */
export async function openAppStore(choice: AppStoreChoice, settings: { dataDir: string }): Promise<OpenedApps> {
  switch (choice.kind) {
    case 'embedded': {
      const db = openDb(settings.dataDir);
      const apps = new SqliteAppStore(db);
      return {
        apps,
        close: async () => {
          apps.close();
          db.close();
        },
      };
    }
    case 'redis': {
      // Loaded here, not at the top: a run on the embedded engine never evaluates ioredis.
      const [{ RedisClient }, { RedisAppStore }] = await Promise.all([
        import('./redis/client.js'),
        import('./redis/apps.js'),
      ]);
      const prefix = 'prefix' in choice ? choice.prefix : undefined;
      const startTimeoutMs = 'startTimeoutMs' in choice ? choice.startTimeoutMs : undefined;
      const client = await RedisClient.open({
        ...(choice.cluster === undefined ? { url: choice.url } : { cluster: choice.cluster }),
        ...(prefix === undefined ? {} : { prefix }),
        ...(startTimeoutMs === undefined ? {} : { startTimeoutMs }),
      });
      const apps = new RedisAppStore(client);
      return {
        apps,
        close: async () => {
          apps.close();
          await client.close();
        },
      };
    }
  }
}
