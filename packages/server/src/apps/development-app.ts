import { SqliteAppStore } from '../engines/sqlite/apps.js';
import { openDb } from '../engines/sqlite/db.js';
import type { App } from '../engines/types.js';
import { newApp } from './generate.js';

/** A word for a shell command line: quoted only when it must be. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The lines printed when a development app was created: its credentials, a command that emits, and
 * how to show the secret again. `dataDir` is given when it is not the default `./data`.
 */
export function developmentAppBanner(app: App, url: string, options: { dataDir?: string } = {}): string {
  const data = options.dataDir === undefined ? '' : ` --data ${shellWord(options.dataDir)}`;
  return [
    '',
    'No app was configured, so a development app was created:',
    `  key:    ${app.key}`,
    `  secret: ${app.secret}`,
    '',
    'Send an event (in another terminal, from this folder):',
    `  REALTIME_URL=${url} REALTIME_KEY=${app.key} REALTIME_SECRET=${app.secret} node examples/emit.mjs`,
    '',
    'Show the secret again, or rotate it:',
    `  npx realtime apps show ${app.key} --secret${data}`,
    `  npx realtime apps rotate-secret ${app.key}${data}`,
    '',
    '',
  ].join('\n');
}

function readApp(dataDir: string, key: string): App | undefined {
  const db = openDb(dataDir);
  try {
    return new SqliteAppStore(db).get(key);
  } finally {
    db.close();
  }
}

/**
 * The app a local demo uses: the one named `development`, else the first app of the data folder,
 * else a new development app (then `created` is true and its credentials should be shown).
 * `current()` reads the app again from the data folder, so a secret rotated by the CLI reaches a
 * running demo; it is undefined once the app is gone.
 */
export function ensureDevelopmentApp(dataDir: string): { app: App; created: boolean; current: () => App | undefined } {
  const db = openDb(dataDir);
  let app: App;
  let created = false;
  try {
    const store = new SqliteAppStore(db);
    const apps = store.list();
    const existing = apps.find((a) => a.name === 'development') ?? apps[0];
    if (existing) {
      app = existing;
    } else {
      app = newApp({ name: 'development' });
      store.upsert(app);
      created = true;
    }
  } finally {
    db.close();
  }
  const key = app.key;
  return { app, created, current: () => readApp(dataDir, key) };
}
