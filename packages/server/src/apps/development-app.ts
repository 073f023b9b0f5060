import { SqliteAppStore } from '../engines/sqlite/apps.js';
import { openDb } from '../engines/sqlite/db.js';
import type { App } from '../engines/types.js';
import { newApp } from './generate.js';

/** The lines printed when a development app was created: its credentials and a command that emits. */
export function developmentAppBanner(app: App, url: string): string {
  return [
    '',
    'No app was configured, so a development app was created:',
    `  key:    ${app.key}`,
    `  secret: ${app.secret}`,
    '',
    'Send an event (in another terminal, from this folder):',
    `  REALTIME_URL=${url} REALTIME_KEY=${app.key} REALTIME_SECRET=${app.secret} node examples/emit.mjs`,
    '',
    '',
  ].join('\n');
}

/**
 * The app a local demo uses: the one named `development`, else the first app of the data folder,
 * else a new development app (then `created` is true and its credentials should be shown).
 */
export function ensureDevelopmentApp(dataDir: string): { app: App; created: boolean } {
  const db = openDb(dataDir);
  try {
    const store = new SqliteAppStore(db);
    const apps = store.list();
    const existing = apps.find((app) => app.name === 'development') ?? apps[0];
    if (existing) return { app: existing, created: false };
    const app = newApp({ name: 'development' });
    store.upsert(app);
    return { app, created: true };
  } finally {
    db.close();
  }
}
