import { type Feature, isFeature } from '@realtime/protocol';
import type { App, AppStore } from '../types.js';
import type { Db } from './db.js';
import { withStoreErrors } from './sqlite-error.js';

interface AppRow {
  key: string;
  secret: string;
  name: string;
  webhook: string;
  features: string;
  rate_per_second: number;
  rate_burst: number;
}

function toApp(row: AppRow): App {
  const features = (JSON.parse(row.features) as unknown[]).filter(isFeature) as Feature[];
  return {
    key: row.key,
    secret: row.secret,
    name: row.name,
    webhook: row.webhook,
    features,
    rateLimit: { perSecond: row.rate_per_second, burst: row.rate_burst },
  };
}

/** Apps in the SQLite file. Read on every request (a point lookup), so CLI changes apply at once. */
export class SqliteAppStore implements AppStore {
  readonly #get;
  readonly #list;
  readonly #upsert;
  readonly #setSecret;
  readonly #setWebhook;
  readonly #remove;

  constructor(db: Db) {
    this.#get = db.prepare<[string], AppRow>('SELECT * FROM apps WHERE key = ?');
    this.#list = db.prepare<[], AppRow>('SELECT * FROM apps ORDER BY key');
    this.#upsert = db.prepare(
      `INSERT INTO apps (key, secret, name, webhook, features, rate_per_second, rate_burst)
       VALUES (@key, @secret, @name, @webhook, @features, @perSecond, @burst)
       ON CONFLICT (key) DO UPDATE SET secret = excluded.secret, name = excluded.name,
         webhook = excluded.webhook, features = excluded.features,
         rate_per_second = excluded.rate_per_second, rate_burst = excluded.rate_burst`,
    );
    this.#setSecret = db.prepare('UPDATE apps SET secret = ? WHERE key = ?');
    this.#setWebhook = db.prepare('UPDATE apps SET webhook = ? WHERE key = ?');
    this.#remove = db.prepare('DELETE FROM apps WHERE key = ?');
  }

  // SQLite errors as StoreErrors: a read the disk refuses answers 503 `unavailable`, not 500.
  readonly get = withStoreErrors((key: string): App | undefined => {
    const row = this.#get.get(key);
    return row ? toApp(row) : undefined;
  });

  readonly list = withStoreErrors((): App[] => this.#list.all().map(toApp));

  readonly upsert = withStoreErrors((app: App): void => {
    this.#upsert.run({
      key: app.key,
      secret: app.secret,
      name: app.name,
      webhook: app.webhook,
      features: JSON.stringify(app.features),
      perSecond: app.rateLimit.perSecond,
      burst: app.rateLimit.burst,
    });
  });

  readonly setSecret = withStoreErrors((key: string, secret: string): boolean => {
    return this.#setSecret.run(secret, key).changes > 0;
  });

  readonly setWebhook = withStoreErrors((key: string, url: string): boolean => {
    return this.#setWebhook.run(url, key).changes > 0;
  });

  readonly remove = withStoreErrors((key: string): boolean => this.#remove.run(key).changes > 0);

  close(): void {
    // The database handle is owned by whoever opened it.
  }
}
