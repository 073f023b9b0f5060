import { nodeOfPage } from '../node-id.js';
import type { CallLapse, CallRecord, CallStore } from '../types.js';

/**
 * Calls in this process's memory: the embedded engine's, where one process is every node (a call
 * of a page here lapses only when this node's lease is not renewed, as in a test). Answers at once.
 */
export class MemoryCallStore implements CallStore {
  /** By `app\0id`. */
  readonly #calls = new Map<string, CallRecord>();
  /** The call each user is in, by `app\0user`. */
  readonly #users = new Map<string, string>();
  readonly #nodes = new Map<string, number>();

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

  renew(node: string, untilMs: number): void {
    this.#nodes.set(node, untilMs);
  }

  takeLapsed(nowMs: number, limit: number): { call: CallRecord; reason: CallLapse }[] {
    const lapsed: { call: CallRecord; reason: CallLapse }[] = [];
    for (const [key, call] of this.#calls) {
      if (lapsed.length >= limit) break;
      let reason: CallLapse | undefined;
      if (this.#lapsed(call.fromPage, nowMs) || (call.toPage !== undefined && this.#lapsed(call.toPage, nowMs))) {
        reason = 'failed';
      } else if (call.toPage === undefined && call.ringUntil <= nowMs) {
        reason = 'missed';
      }
      if (reason === undefined) continue;
      this.#remove(key, call);
      lapsed.push({ call: copy(call), reason });
    }
    return lapsed;
  }

  close(): void {}

  /** A page whose node never took a lease, or whose lease ended. */
  #lapsed(page: string, nowMs: number): boolean {
    return (this.#nodes.get(nodeOfPage(page)) ?? Number.NEGATIVE_INFINITY) <= nowMs;
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
