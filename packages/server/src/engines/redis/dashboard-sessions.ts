import type { DashboardSessionStore } from '../dashboard-session-store.js';
import type { RedisClient, Script } from './client.js';

// KEYS: the secret's key. ARGV: the candidate. The stored secret, the candidate stored when none is.
const SECRET_LUA = `
local kept = redis.call('get', KEYS[1])
if kept then return kept end
redis.call('set', KEYS[1], ARGV[1])
return ARGV[1]`;

/**
 * Dashboard sessions in Redis, shared by every node: the signing secret (`dash:secret`, made by the
 * first node to need it, in one script so two nodes racing agree) and a key per open session
 * (`dash:s:<id>`, holding when it ends, expiring then).
 */
export class RedisDashboardSessionStore implements DashboardSessionStore {
  readonly #client: RedisClient;
  readonly #secret: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#secret = client.script('rtDashboardSecret', SECRET_LUA);
  }

  #session(id: string): string {
    return this.#client.key(`dash:s:${id}`);
  }

  async signingSecret(candidate: Buffer): Promise<Buffer> {
    const kept = await this.#secret([this.#client.key('dash:secret')], [candidate.toString('base64url')]);
    return Buffer.from(String(kept), 'base64url');
  }

  async storedSecret(): Promise<Buffer | undefined> {
    const kept = await this.#client.call((redis) => redis.get(this.#client.key('dash:secret')));
    return kept === null ? undefined : Buffer.from(kept, 'base64url');
  }

  async open(id: string, expiresMs: number, nowMs: number): Promise<void> {
    const ttl = Math.max(1, Math.ceil(expiresMs - nowMs));
    await this.#client.call((redis) => redis.set(this.#session(id), String(expiresMs), 'PX', ttl));
  }

  async isOpen(id: string, nowMs: number): Promise<boolean> {
    const ends = await this.#client.call((redis) => redis.get(this.#session(id)));
    return ends !== null && Number(ends) > nowMs;
  }

  async close(id: string): Promise<void> {
    await this.#client.call((redis) => redis.del(this.#session(id)));
  }
}
