/**
 * Which rooms have webhook reports waiting. A room's reports live in its own slot (`{<app>:<room>}:w`,
 * written with the event); the index that lets the batcher find them lives in one of
 * REPORT_INDEX_KEYS slots (`wh:{ix<k>}`), so no key is touched by every page send. Being another
 * slot, the index is written in a step of its own: before the room's script (so a reader that sees
 * the event finds its report; skipped when the node wrote the room's entry within the last second,
 * so a busy room's page sends touch the index about once a second) and again after it when the
 * room's list went from empty to not (so a batcher that dropped the entry meanwhile cannot leave the
 * room unseen). The batcher drops an entry only after seeing the list empty, then looks again (see
 * RedisWebhookStore); a node that died between the steps leaves a list without an entry: the repair
 * walk (SCAN) finds it.
 */
import type { RedisClient, Script } from './client.js';
import { reportAppsKey, reportIndexOf, reportRoomsKey } from './keys.js';

// KEYS: index k's apps, index k's rooms of the app. ARGV: app, room.
const ADD_LUA = `
redis.call('sadd', KEYS[1], ARGV[1])
redis.call('sadd', KEYS[2], ARGV[2])
return 1`;

// KEYS: as ADD. ARGV: app, room. Drops the room, and the app once it has no room left in index k.
const DROP_LUA = `
redis.call('srem', KEYS[2], ARGV[2])
if redis.call('scard', KEYS[2]) == 0 then redis.call('srem', KEYS[1], ARGV[1]) end
return 1`;

export class ReportIndex {
  readonly #client: RedisClient;
  readonly #add: Script;
  readonly #drop: Script;

  constructor(client: RedisClient) {
    this.#client = client;
    this.#add = client.script('rtReportIndexAdd', ADD_LUA);
    this.#drop = client.script('rtReportIndexDrop', DROP_LUA);
  }

  #keys(app: string, room: string): [string, string] {
    const k = reportIndexOf(app, room);
    return [reportAppsKey(this.#client.prefix, k), reportRoomsKey(this.#client.prefix, k, app)];
  }

  async add(app: string, room: string): Promise<void> {
    await this.#add(this.#keys(app, room), [app, room]);
  }

  async drop(app: string, room: string): Promise<void> {
    await this.#drop(this.#keys(app, room), [app, room]);
  }
}
