import { type Feature, isFeature } from '@realtime/protocol';
import type { App, AppStore, SecretRotation } from '../types.js';
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
  old_secret: string | null;
  retires_at: number | null;
  signer: string | null;
}

function toApp(row: AppRow): App {
  const features = (JSON.parse(row.features) as unknown[]).filter(isFeature) as Feature[];
  const app: App = {
    key: row.key,
    secret: row.secret,
    name: row.name,
    webhook: row.webhook,
    features,
    rateLimit: { perSecond: row.rate_per_second, burst: row.rate_burst },
  };
  if (row.old_secret !== null && row.retires_at !== null) {
    app.rotation = {
      oldSecret: row.old_secret,
      retiresAt: row.retires_at,
      signer: row.signer === 'old' ? 'old' : 'new',
    };
  }
  return app;
}

const ROTATION_COLUMNS = [
  ['old_secret', 'TEXT'],
  ['retires_at', 'INTEGER'],
  ['signer', 'TEXT'],
] as const;

/**
 * Adds the rotation columns to a file made before rotations (db.ts creates the table without them).
 * Two processes opening the file at once (the server and the CLI) may both try: the loser finds them.
 */
function addRotationColumns(db: Db): void {
  const has = (column: string) =>
    db
      .prepare<[], { name: string }>('PRAGMA table_info(apps)')
      .all()
      .some((c) => c.name === column);
  for (const [column, type] of ROTATION_COLUMNS) {
    if (has(column)) continue;
    try {
      db.exec(`ALTER TABLE apps ADD COLUMN ${column} ${type}`);
    } catch (error) {
      if (!has(column)) throw error;
    }
  }
}

const rotationFields = (rotation: SecretRotation | undefined) => ({
  oldSecret: rotation?.oldSecret ?? null,
  retiresAt: rotation?.retiresAt ?? null,
  signer: rotation?.signer ?? null,
});

/** Apps in the SQLite file. Read on every request (a point lookup), so CLI changes apply at once. */
export class SqliteAppStore implements AppStore {
  readonly #get;
  readonly #list;
  readonly #upsert;
  readonly #setSecret;
  readonly #setWebhook;
  readonly #remove;

  constructor(db: Db) {
    addRotationColumns(db);
    this.#get = db.prepare<[string], AppRow>('SELECT * FROM apps WHERE key = ?');
    this.#list = db.prepare<[], AppRow>('SELECT * FROM apps ORDER BY key');
    this.#upsert = db.prepare(
      `INSERT INTO apps (key, secret, name, webhook, features, rate_per_second, rate_burst, old_secret, retires_at, signer)
       VALUES (@key, @secret, @name, @webhook, @features, @perSecond, @burst, @oldSecret, @retiresAt, @signer)
       ON CONFLICT (key) DO UPDATE SET secret = excluded.secret, name = excluded.name,
         webhook = excluded.webhook, features = excluded.features,
         rate_per_second = excluded.rate_per_second, rate_burst = excluded.rate_burst,
         old_secret = excluded.old_secret, retires_at = excluded.retires_at, signer = excluded.signer`,
    );
    this.#setSecret = db.prepare(
      `UPDATE apps SET secret = @secret, old_secret = @oldSecret, retires_at = @retiresAt, signer = @signer
       WHERE key = @key AND (@ifSecret IS NULL OR secret = @ifSecret)`,
    );
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
      ...rotationFields(app.rotation),
    });
  });

  readonly setSecret = withStoreErrors(
    (key: string, secret: string, rotation?: SecretRotation, ifSecret?: string): boolean =>
      this.#setSecret.run({ key, secret, ...rotationFields(rotation), ifSecret: ifSecret ?? null }).changes > 0,
  );

  readonly setWebhook = withStoreErrors((key: string, url: string): boolean => {
    return this.#setWebhook.run(url, key).changes > 0;
  });

  readonly remove = withStoreErrors((key: string): boolean => this.#remove.run(key).changes > 0);

  close(): void {
    // The database handle is owned by whoever opened it.
  }
}
