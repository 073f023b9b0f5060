import type { EngineChoice } from './open-engine.js';
import { SqliteAppStore } from './sqlite/apps.js';
import { openDb } from './sqlite/db.js';
import type { AppStore } from './types.js';

/** An app store opened alone, and how to let it go. */
export interface OpenedApps {
  apps: AppStore;
  close(): Promise<void>;
}

/**
 * Opens only the apps of an engine, for tools that need nothing else (the CLI's `apps` commands, the
 * development app). Opening a whole engine would do more than read: the embedded engine takes the
 * pending offline reports out of its file, which a CLI run beside a running server must not.
 * Throws what the storage throws when it cannot be opened (a folder that is a file, a locked file).
 */
export async function openAppStore(choice: EngineChoice, settings: { dataDir: string }): Promise<OpenedApps> {
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
  }
}
