import { nodeOfPage } from '../node-id.js';
import type { CallRecord, CallStore } from '../types.js';

/**
 * Calls in this process's memory: the embedded engine's, where one process is every node (a node's
 * calls are taken only when a test says it died). Answers at once.
 */
export class MemoryCallStore implements CallStore {
  /** By `app\0id`. */
  readonly #calls = new Map<string, CallRecord>();
  /** The call each user is in, by `app\0user`. */
  readonly #users = new Map<string, string>();

  place(call: CallRecord): 'placed' | 'busy' | 'in_call' {
    if (this.#users.has(`${call.app}\u0000${call.from}`)) return 'in_call';
    if (this.#users.has(`${call.app}\u0000${call.to}`)) return 'busy';
    const key = `${call.app}\u0000${call.id}`;
    this.#calls.set(key, { ...call, media: [...call.media] });
    this.#users.set(`${call.app}\u0000${call.from}`, key);
    this.#users.set(`${call.app}\u0000${call.to}`, key);
    return 'placed';
  }

  answer(app: string, id: string, page: string, nowMs: number): CallRecord | undefined {
    const call = this.#calls.get(`${app}\u0000${id}`);
    if (!call || call.toPage !== undefined) return undefined;
    call.toPage = page;
    call.answeredAt = nowMs;
    return copy(call);
  }

  end(app: string, id: string): CallRecord | undefined {
    const key = `${app}\u0000${id}`;
    const call = this.#calls.get(key);
    if (!call) return undefined;
    this.#remove(key, call);
    return copy(call);
  }

  get(app: string, id: string): CallRecord | undefined {
    const call = this.#calls.get(`${app}\u0000${id}`);
    return call && copy(call);
  }

  callOf(app: string, user: string): CallRecord | undefined {
    const key = this.#users.get(`${app}\u0000${user}`);
    const call = key === undefined ? undefined : this.#calls.get(key);
    return call && copy(call);
  }

  takeMissed(nowMs: number, limit: number): CallRecord[] {
    return this.#take(limit, (call) => call.toPage === undefined && call.ringUntil <= nowMs);
  }

  takeNode(node: string, limit: number): CallRecord[] {
    return this.#take(
      limit,
      (call) => nodeOfPage(call.fromPage) === node || (call.toPage !== undefined && nodeOfPage(call.toPage) === node),
    );
  }

  close(): void {}

  #take(limit: number, due: (call: CallRecord) => boolean): CallRecord[] {
    const taken: CallRecord[] = [];
    for (const [key, call] of this.#calls) {
      if (taken.length >= limit) break;
      if (!due(call)) continue;
      this.#remove(key, call);
      taken.push(copy(call));
    }
    return taken;
  }

  #remove(key: string, call: CallRecord): void {
    this.#calls.delete(key);
    for (const user of [call.from, call.to]) {
      const userKey = `${call.app}\u0000${user}`;
      if (this.#users.get(userKey) === key) this.#users.delete(userKey);
    }
  }
}

function copy(call: CallRecord): CallRecord {
  return { ...call, media: [...call.media] };
}
