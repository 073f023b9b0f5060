import { LIMITS, type Member } from '@realtime/protocol';
import { nodeOfPage } from '../node-id.js';
import type {
  Departure,
  GoneUser,
  MemberCount,
  MemberPage,
  NameRange,
  NodeClaim,
  OccupiedRoom,
  OnlineUser,
  PresenceStore,
  RoomSize,
} from '../types.js';
import { MemberList } from './member-list.js';
import { NameIndex } from './name-index.js';

/** A user whose last page closed, waiting for their report to fall due. */
interface DueOffline {
  key: string;
  app: string;
  user: string;
  at: number;
}

interface UserState {
  pages: Set<string>;
  /** While no page is open: when `user.offline` falls due (the user is online until then). */
  offlineAt: number | undefined;
}

/** What one page holds: its user, the rooms it is seated in, the presence rooms it is a member of (keys). */
interface Held {
  user?: { app: string; user: string };
  rooms: Set<string>;
  members: Map<string, { app: string; room: string; user: string }>;
}

/** A `user.offline` still to come, kept across a graceful restart. */
export interface PendingOffline extends GoneUser {
  dueAt: number;
}

/** Who is where, for one process: the embedded engine's presence. */
export class MemoryPresenceStore implements PresenceStore {
  readonly #users = new Map<string, UserState>();
  /** Users whose last page closed, in the order their offline falls due. */
  readonly #due: DueOffline[] = [];
  #dueHead = 0;
  /** Pages per room. */
  readonly #occupied = new Map<string, Set<string>>();
  /** Presence rooms: members by user, each with the pages that hold them there. */
  readonly #rooms = new Map<string, MemberList>();
  /** Per app: users with a page open, and rooms with a page in them (the dashboard's listings). */
  readonly #onlineUsers = new NameIndex();
  readonly #occupiedRooms = new NameIndex();
  /** The presence sequence: one number per member change, over every room (MemberCount). */
  #seq = 0;
  readonly #nextSeq = () => ++this.#seq;
  readonly #offlineDelayMs: number;
  /** What each page holds, so the pages whose closes could not be written can be closed later. */
  readonly #held = new Map<string, Held>();

  constructor(options: { offlineDelayMs?: number } = {}) {
    this.#offlineDelayMs = options.offlineDelayMs ?? LIMITS.offlineDelayMs;
  }

  #holding(page: string): Held {
    let held = this.#held.get(page);
    if (!held) {
      held = { rooms: new Set(), members: new Map() };
      this.#held.set(page, held);
    }
    return held;
  }

  #release(page: string, held: Held): void {
    if (held.user === undefined && held.rooms.size === 0 && held.members.size === 0) this.#held.delete(page);
  }

  pageOpened(app: string, user: string, page: string): boolean {
    const key = `${app}\u0000${user}`;
    const state = this.#users.get(key);
    this.#holding(page).user = { app, user };
    this.#onlineUsers.add(app, user);
    if (!state) {
      this.#users.set(key, { pages: new Set([page]), offlineAt: undefined });
      return true;
    }
    // Back within the offline delay: no `user.offline`, and no second `user.online`.
    state.pages.add(page);
    state.offlineAt = undefined;
    return false;
  }

  pageClosed(app: string, user: string, page: string, nowMs: number): void {
    const key = `${app}\u0000${user}`;
    const held = this.#held.get(page);
    if (held?.user?.app === app && held.user.user === user) {
      held.user = undefined;
      this.#release(page, held);
    }
    const state = this.#users.get(key);
    if (!state?.pages.delete(page) || state.pages.size > 0) return;
    this.#onlineUsers.remove(app, user);
    state.offlineAt = nowMs + this.#offlineDelayMs;
    this.#due.push({ key, app, user, at: state.offlineAt });
  }

  takeOffline(nowMs: number, limit: number): GoneUser[] {
    const gone: GoneUser[] = [];
    while (this.#dueHead < this.#due.length && gone.length < limit) {
      const entry = this.#due[this.#dueHead] as DueOffline;
      if (entry.at > nowMs) break;
      this.#dueHead++;
      const state = this.#users.get(entry.key);
      // A user who came back, or closed again later, has a newer entry (or none due).
      if (!state || state.pages.size > 0 || state.offlineAt !== entry.at) continue;
      this.#users.delete(entry.key);
      gone.push({ app: entry.app, user: entry.user });
    }
    if (this.#dueHead > 1024 && this.#dueHead * 2 > this.#due.length) {
      this.#due.splice(0, this.#dueHead);
      this.#dueHead = 0;
    }
    return gone;
  }

  online(app: string, users: readonly string[], nowMs: number): boolean[] {
    return users.map((user) => {
      const state = this.#users.get(`${app}\u0000${user}`);
      if (!state) return false;
      return state.pages.size > 0 || (state.offlineAt !== undefined && nowMs < state.offlineAt);
    });
  }

  userPages(app: string, user: string): number {
    return this.#users.get(`${app}\u0000${user}`)?.pages.size ?? 0;
  }

  /** The offline reports still to come (a graceful stop keeps them for the next start). */
  pendingOffline(): PendingOffline[] {
    const pending: PendingOffline[] = [];
    for (const [key, state] of this.#users) {
      if (state.pages.size > 0 || state.offlineAt === undefined) continue;
      const [app = '', user = ''] = key.split('\u0000');
      pending.push({ app, user, dueAt: state.offlineAt });
    }
    return pending;
  }

  /** Takes back what a previous run left: those users are online until their report is due. */
  restore(pending: readonly PendingOffline[]): void {
    for (const { app, user, dueAt } of [...pending].sort((a, b) => a.dueAt - b.dueAt)) {
      const key = `${app}\u0000${user}`;
      if (this.#users.has(key)) continue;
      this.#users.set(key, { pages: new Set(), offlineAt: dueAt });
      this.#due.push({ key, app, user, at: dueAt });
    }
    // Entries pushed before may now be out of order: due times sort the whole queue once.
    const rest = this.#due.splice(this.#dueHead).sort((a, b) => a.at - b.at);
    this.#due.length = 0;
    this.#dueHead = 0;
    this.#due.push(...rest);
  }

  enterRoom(app: string, room: string, page: string): boolean {
    const key = `${app}\u0000${room}`;
    this.#holding(page).rooms.add(key);
    const pages = this.#occupied.get(key);
    if (pages) {
      pages.add(page);
      return false;
    }
    this.#occupied.set(key, new Set([page]));
    this.#occupiedRooms.add(app, room);
    return true;
  }

  exitRoom(app: string, room: string, page: string): boolean {
    const key = `${app}\u0000${room}`;
    const held = this.#held.get(page);
    if (held?.rooms.delete(key)) this.#release(page, held);
    const pages = this.#occupied.get(key);
    if (!pages?.delete(page) || pages.size > 0) return false;
    this.#occupied.delete(key);
    this.#occupiedRooms.remove(app, room);
    return true;
  }

  joinRoom(app: string, room: string, member: Member, page: string): boolean {
    const key = `${app}\u0000${room}`;
    let members = this.#rooms.get(key);
    if (!members) {
      members = new MemberList();
      this.#rooms.set(key, members);
    }
    this.#holding(page).members.set(key, { app, room, user: member.user });
    return members.add(member, page, this.#nextSeq);
  }

  leaveRoom(app: string, room: string, user: string, page: string): boolean {
    const key = `${app}\u0000${room}`;
    const held = this.#held.get(page);
    if (held?.members.get(key)?.user === user) {
      held.members.delete(key);
      this.#release(page, held);
    }
    const members = this.#rooms.get(key);
    if (!members?.remove(user, page)) return false;
    this.#seq++;
    if (members.size === 0) this.#rooms.delete(key);
    return true;
  }

  members(app: string, room: string): Member[] {
    return this.#rooms.get(`${app}\u0000${room}`)?.all() ?? [];
  }

  memberPage(app: string, room: string, page: { after?: string; limit: number }): MemberPage {
    const members = this.#rooms.get(`${app}\u0000${room}`);
    const count = { count: members?.size ?? 0, seq: this.#seq };
    if (!members) return { ...count, members: [] };
    const after = page.after === undefined ? 0 : Number(page.after);
    const read = members.page(Number.isFinite(after) ? after : 0, Math.max(1, Math.floor(page.limit)));
    const answer: MemberPage = { ...count, members: read.members };
    if (read.more && read.last !== undefined) answer.cursor = String(read.last);
    return answer;
  }

  memberCount(app: string, room: string): MemberCount {
    return { count: this.#rooms.get(`${app}\u0000${room}`)?.size ?? 0, seq: this.#seq };
  }

  onlineUsers(app: string, range: NameRange): { users: OnlineUser[]; more: boolean } {
    const { names, more } = this.#onlineUsers.list(app, range);
    return { users: names.map((user) => ({ user, pages: this.userPages(app, user) })), more };
  }

  occupiedRooms(app: string, range: NameRange): { rooms: OccupiedRoom[]; more: boolean } {
    const { names, more } = this.#occupiedRooms.list(app, range);
    return { rooms: names.map((room) => ({ room, ...this.roomSize(app, room) })), more };
  }

  roomSize(app: string, room: string): RoomSize {
    const key = `${app}\u0000${room}`;
    return { pages: this.#occupied.get(key)?.size ?? 0, members: this.#rooms.get(key)?.size ?? 0 };
  }

  /** Dead nodes' pages set apart to sweep, with the lapse that set them apart (see sweepNode). */
  readonly #sweeps = new Map<string, { lapse: number; pages: Set<string> }>();

  sweepNode(claim: NodeClaim, nowMs: number, limit: number): { departures: Departure[]; done: boolean } {
    let sweep = this.#sweeps.get(claim.node);
    if (!sweep || sweep.lapse < claim.lapse) {
      sweep = { lapse: claim.lapse, pages: new Set([...(sweep?.pages ?? []), ...this.nodePages(claim.node)]) };
      this.#sweeps.set(claim.node, sweep);
    }
    const pages = [...sweep.pages].slice(0, Math.max(1, Math.floor(limit)));
    for (const page of pages) sweep.pages.delete(page);
    return { departures: this.closePages(pages, nowMs), done: sweep.pages.size === 0 };
  }

  nodePages(node: string): string[] {
    return [...this.#held.keys()].filter((page) => nodeOfPage(page) === node);
  }

  closePages(pages: readonly string[], nowMs: number): Departure[] {
    const departures: Departure[] = [];
    for (const page of pages) {
      const held = this.#held.get(page);
      if (!held) continue;
      // As a close goes: presence rooms, then rooms, then the user.
      for (const { app, room, user } of [...held.members.values()]) {
        const member = this.#rooms.get(`${app}\u0000${room}`)?.get(user) ?? { user };
        if (this.leaveRoom(app, room, user, page)) departures.push({ type: 'member.left', app, room, member });
      }
      for (const key of [...held.rooms]) {
        const [app = '', room = ''] = key.split('\u0000');
        if (this.exitRoom(app, room, page)) departures.push({ type: 'room.vacated', app, room });
      }
      if (held.user) this.pageClosed(held.user.app, held.user.user, page, nowMs);
      this.#held.delete(page);
    }
    return departures;
  }

  close(): void {
    this.#users.clear();
    this.#rooms.clear();
    this.#occupied.clear();
    this.#onlineUsers.clear();
    this.#occupiedRooms.clear();
    this.#held.clear();
    this.#sweeps.clear();
  }
}
