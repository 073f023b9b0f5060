import { type AppStoreChoice, openAppStore } from '../engines/open-apps.js';
import type { App } from '../engines/types.js';
import { newApp } from './generate.js';

/** A word for a shell command line: quoted only when it must be. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The lines printed when a development app was created: its credentials, a command that emits, and
 * how to show the secret again. The commands name the store when it is not the default `./data`:
 * `dataDir`, `redis` (the Redis URL) or `redisCluster` (the cluster's seed URLs, comma-separated).
 */
export function developmentAppBanner(
  app: App,
  url: string,
  options: { dataDir?: string; redis?: string; redisCluster?: string } = {},
): string {
  const data =
    options.redis !== undefined
      ? ` --redis ${shellWord(options.redis)}`
      : options.redisCluster !== undefined
        ? ` --redis-cluster ${shellWord(options.redisCluster)}`
        : options.dataDir === undefined
          ? ''
          : ` --data ${shellWord(options.dataDir)}`;
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

/** Where the development app is kept: the data folder of the embedded engine by default. */
export interface DevelopmentAppOptions {
  dataDir: string;
  engine?: AppStoreChoice;
}

export interface DevelopmentApp {
  app: App;
  /** True when the app was made now: its credentials should be shown. */
  created: boolean;
  /**
   * The app as the store holds it now, so a secret rotated by the CLI reaches a running demo;
   * undefined once the app is gone.
   */
  current(): Promise<App | undefined>;
  /** Lets the store go; `current` must not be called after. */
  close(): Promise<void>;
}

/**
 * The app a local demo uses: the one named `development`, else the first app of the store, else a
 * new development app (then `created` is true and its credentials should be shown). Call it once
 * the service listens: a start that fails then leaves no app whose credentials nobody saw.
 * A data folder alone (a string) means the embedded engine there.
 */
export async function ensureDevelopmentApp(options: DevelopmentAppOptions | string): Promise<DevelopmentApp> {
  const { dataDir, engine = { kind: 'embedded' } } = typeof options === 'string' ? { dataDir: options } : options;
  const opened = await openAppStore(engine, { dataDir });
  try {
    const store = opened.apps;
    const apps = await store.list();
    let app = apps.find((a) => a.name === 'development') ?? apps[0];
    let created = false;
    if (!app) {
      app = newApp({ name: 'development' });
      await store.upsert(app);
      created = true;
    }
    const key = app.key;
    return { app, created, current: async () => await store.get(key), close: () => opened.close() };
  } catch (error) {
    await opened.close();
    throw error;
  }
}
