import { type Feature, isFeature } from '@realtime/protocol';
import type { App, AppStore, SecretRotation } from '../types.js';
import type { RedisClient, Script } from './client.js';

/*
 * Keys (after the prefix), all under the one tag `{apps}` (one slot: apps change rarely, and an
 * upsert or a removal changes the hash and the set together):
 * - `app:{apps}:<key>` one app's hash (numbers as their shortest decimal text, which reads back exactly);
 * - `apps:{apps}` the set of app keys.
 * Before, they were `app:<key>` and `apps` (two slots): a store adopts those once, at its first call.
 */

// KEYS: the app's hash, the set of app keys. ARGV: the app key, then field, value pairs.
const UPSERT_LUA = `
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], unpack(ARGV, 2))
redis.call('sadd', KEYS[2], ARGV[1])
return 1`;

// Sets one field of an existing app; 0 when there is no such app.
const SET_FIELD_LUA = `
if redis.call('exists', KEYS[1]) == 0 then return 0 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
return 1`;

// Sets the secret of an existing app and its rotation fields, dropping those of a rotation before;
// 0 when there is no such app, or (ARGV[1] '1') its secret is no longer ARGV[2]. KEYS: the app's
// hash. ARGV: the check, the secret expected, then field, value pairs (the secret first).
const SET_SECRET_LUA = `
if redis.call('exists', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '1' and redis.call('hget', KEYS[1], 'secret') ~= ARGV[2] then return 0 end
redis.call('hdel', KEYS[1], 'oldSecret', 'retiresAt', 'signer')
redis.call('hset', KEYS[1], unpack(ARGV, 3))
return 1`;

/** A rotation's hash fields (none without one). */
function rotationFields(rotation: SecretRotation | undefined): string[] {
  if (!rotation) return [];
  return ['oldSecret', rotation.oldSecret, 'retiresAt', String(rotation.retiresAt), 'signer', rotation.signer];
}

function toApp(fields: Record<string, string>): App | undefined {
  if (fields.key === undefined) return undefined;
  let features: Feature[] = [];
  try {
    const parsed = JSON.parse(fields.features ?? '[]') as unknown;
    if (Array.isArray(parsed)) features = parsed.filter(isFeature);
  } catch {
    // An unreadable list grants nothing.
  }
  const app: App = {
    key: fields.key,
    secret: fields.secret ?? '',
    name: fields.name ?? '',
    webhook: fields.webhook ?? '',
    features,
    rateLimit: { perSecond: Number(fields.perSecond ?? 0), burst: Number(fields.burst ?? 0) },
  };
  if (fields.oldSecret !== undefined && fields.retiresAt !== undefined) {
    app.rotation = {
      oldSecret: fields.oldSecret,
      retiresAt: Number(fields.retiresAt),
      signer: fields.signer === 'old' ? 'old' : 'new',
    };
  }
  return app;
}

// KEYS: the app's hash, the set of app keys. ARGV: the app key, then field, value pairs. Stores an
// app kept under the names from before, unless it was written under the new ones since.
const ADOPT_LUA = `
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], unpack(ARGV, 2))
  redis.call('sadd', KEYS[2], ARGV[1])
end
return 1`;

// KEYS: the app's hash, the set of app keys. ARGV: the app key. 0 when there was no such app.
const REMOVE_LUA = `
local gone = redis.call('del', KEYS[1])
redis.call('srem', KEYS[2], ARGV[1])
return gone`;

/** Apps in Redis: a hash per app and a set of keys. No cache: every node and the CLI see a write at once. */
export class RedisAppStore implements AppStore {
  readonly #client: RedisClient;
  readonly #upsert: Script;
  readonly #setField: Script;
  readonly #setSecret: Script;
  readonly #remove: Script;
  readonly #adoptOne: Script;
  readonly #list: string;
  #adopted: Promise<void> | undefined;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#upsert = client.script('rtAppUpsert', UPSERT_LUA);
    this.#setField = client.script('rtAppSetField', SET_FIELD_LUA);
    this.#setSecret = client.script('rtAppSetSecret', SET_SECRET_LUA);
    this.#remove = client.script('rtAppRemove', REMOVE_LUA);
    this.#adoptOne = client.script('rtAppAdopt', ADOPT_LUA);
    this.#list = client.key('apps:{apps}');
  }

  #key(key: string): string {
    return this.#client.key(`app:{apps}:${key}`);
  }

  /** Adopts the apps kept under the names from before, once per store (again after a failure). */
  #adopt(): Promise<void> {
    this.#adopted ??= this.#adoptLegacy().catch((error: unknown) => {
      this.#adopted = undefined;
      throw error;
    });
    return this.#adopted;
  }

  async #adoptLegacy(): Promise<void> {
    const legacy = this.#client.key('apps');
    const keys = await this.#client.call((redis) => redis.smembers(legacy));
    for (const key of keys) {
      const old = this.#client.key(`app:${key}`);
      const fields = await this.#client.call((redis) => redis.hgetall(old));
      // Copied first, removed after: a crash in between copies it again next time, harmlessly.
      if (fields.key !== undefined) {
        await this.#adoptOne([this.#key(key), this.#list], [key, ...Object.entries(fields).flat()]);
      }
      await this.#client.call((redis) => redis.del(old));
      await this.#client.call((redis) => redis.srem(legacy, key));
    }
  }

  async get(key: string): Promise<App | undefined> {
    // Not before the generation is confirmed: a Redis that lost its data answers `unavailable`
    // until the apps a node knows of are put back, never "no such app".
    void this.#client.generation;
    await this.#adopt();
    return toApp(await this.#client.call((redis) => redis.hgetall(this.#key(key))));
  }

  async list(): Promise<App[]> {
    await this.#adopt();
    const keys = await this.#client.call((redis) => redis.smembers(this.#list));
    const all = await Promise.all(keys.map((key) => this.get(key)));
    return all.filter((app): app is App => app !== undefined);
  }

  async upsert(app: App): Promise<void> {
    await this.#adopt();
    await this.#upsert(
      [this.#key(app.key), this.#list],
      [
        app.key,
        'key',
        app.key,
        'secret',
        app.secret,
        'name',
        app.name,
        'webhook',
        app.webhook,
        'features',
        JSON.stringify(app.features),
        'perSecond',
        String(app.rateLimit.perSecond),
        'burst',
        String(app.rateLimit.burst),
        ...rotationFields(app.rotation),
      ],
    );
  }

  async setSecret(key: string, secret: string, rotation?: SecretRotation, ifSecret?: string): Promise<boolean> {
    await this.#adopt();
    const check = ifSecret === undefined ? ['0', ''] : ['1', ifSecret];
    return (await this.#setSecret([this.#key(key)], [...check, 'secret', secret, ...rotationFields(rotation)])) === 1;
  }

  async setWebhook(key: string, url: string): Promise<boolean> {
    await this.#adopt();
    return (await this.#setField([this.#key(key)], ['webhook', url])) === 1;
  }

  async remove(key: string): Promise<boolean> {
    await this.#adopt();
    return (await this.#remove([this.#key(key), this.#list], [key])) === 1;
  }

  close(): void {
    // The client is shared by the engine's stores and closed by whoever opened it.
  }
}
