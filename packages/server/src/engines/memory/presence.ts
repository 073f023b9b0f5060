import { LIMITS, type Member } from '@realtime/protocol';
import type { PresenceStore } from '../types.js';

interface UserState {
  pages: number;
  /** When the last page closed; the user stays online until this plus the offline delay. */
  lastClosedAt: number;
}

/** Online state of one process's pages. */
export class MemoryPresenceStore implements PresenceStore {
  readonly #users = new Map<string, UserState>();
  /** Presence rooms: members by user, each with the pages that hold them there. */
  readonly #rooms = new Map<string, Map<string, { member: Member; pages: Set<string> }>>();
  readonly #offlineDelayMs: number;
  /** Users whose last page closed, oldest first: swept as time passes, so the map keeps no one offline. */
  readonly #closed: { key: string; at: number }[] = [];
  #closedHead = 0;

  constructor(options: { offlineDelayMs?: number } = {}) {
    this.#offlineDelayMs = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
  }

  pageOpened(app: string, user: string, nowMs: number): void {
    this.#sweep(nowMs);
    const key = `${app}:${user}`;
    const state = this.#users.get(key);
    if (state) state.pages++;
    else this.#users.set(key, { pages: 1, lastClosedAt: 0 });
  }

  pageClosed(app: string, user: string, nowMs: number): void {
    const state = this.#users.get(`${app}:${user}`);
    if (!state || state.pages === 0) return;
    state.pages--;
    if (state.pages === 0) {
      state.lastClosedAt = nowMs;
      this.#closed.push({ key: `${app}:${user}`, at: nowMs });
    }
    this.#sweep(nowMs);
  }

  /** A user whose last page closed before a restart: online until `closedAt` plus the delay. */
  closedBefore(app: string, user: string, closedAt: number): void {
    const key = `${app}:${user}`;
    if (this.#users.has(key)) return;
    this.#users.set(key, { pages: 0, lastClosedAt: closedAt });
    this.#closed.push({ key, at: closedAt });
  }

  /** Forgets users offline for longer than the delay (amortised: a few per call, no timer). */
  #sweep(nowMs: number): void {
    while (this.#closedHead < this.#closed.length) {
      const entry = this.#closed[this.#closedHead] as { key: string; at: number };
      if (nowMs < entry.at + this.#offlineDelayMs) break;
      this.#closedHead++;
      const state = this.#users.get(entry.key);
      if (state && state.pages === 0 && state.lastClosedAt === entry.at) this.#users.delete(entry.key);
    }
    if (this.#closedHead > 1024 && this.#closedHead * 2 > this.#closed.length) {
      this.#closed.splice(0, this.#closedHead);
      this.#closedHead = 0;
    }
  }

  online(app: string, users: readonly string[], nowMs: number): boolean[] {
    return users.map((user) => {
      const key = `${app}:${user}`;
      const state = this.#users.get(key);
      if (!state) return false;
      if (state.pages > 0) return true;
      if (nowMs < state.lastClosedAt + this.#offlineDelayMs) return true;
      this.#users.delete(key);
      return false;
    });
  }

  joinRoom(app: string, room: string, member: Member, page: string): boolean {
    const key = `${app}\u0000${room}`;
    let members = this.#rooms.get(key);
    if (!members) {
      members = new Map();
      this.#rooms.set(key, members);
    }
    const existing = members.get(member.user);
    if (existing) {
      existing.pages.add(page);
      return false;
    }
    members.set(member.user, { member, pages: new Set([page]) });
    return true;
  }

  leaveRoom(app: string, room: string, user: string, page: string): boolean {
    const key = `${app}\u0000${room}`;
    const members = this.#rooms.get(key);
    const entry = members?.get(user);
    if (!members || !entry?.pages.delete(page)) return false;
    if (entry.pages.size > 0) return false;
    members.delete(user);
    if (members.size === 0) this.#rooms.delete(key);
    return true;
  }

  members(app: string, room: string): Member[] {
    const members = this.#rooms.get(`${app}\u0000${room}`);
    return members ? [...members.values()].map((entry) => entry.member) : [];
  }

  close(): void {
    this.#users.clear();
    this.#rooms.clear();
  }
}
