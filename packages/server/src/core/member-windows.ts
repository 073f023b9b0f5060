import type { Member } from '@realtime/protocol';
import type { MemberCount, RoomEvent } from '../engines/types.js';

/**
 * How presence scales (docs/protocol.md, "Large presence rooms"). Up to `threshold` members a room
 * behaves as it always did: `joined` lists every member and each change is one `$member.*` event.
 * Above it, `joined` carries the count and the first members, pages come on demand (`list`), and
 * the changes of a window go to pages as one `members` frame; the window grows with the room
 * (`msPerMember` ms per member, between `minWindowMs` and `maxWindowMs`), so the frames a room's
 * pages receive stay about pages x windows however many members come and go.
 */
export interface MemberScale {
  /** Members up to which a room is small. Default 100. */
  threshold: number;
  /** Members per page of a `list` answer. Default 100. */
  pageSize: number;
  minWindowMs: number;
  maxWindowMs: number;
  msPerMember: number;
  /** Changes one `members` frame holds at most: a window with more goes out early. Default 1,000. */
  maxChanges: number;
}

export const MEMBER_SCALE: Readonly<MemberScale> = {
  threshold: 100,
  pageSize: 100,
  minWindowMs: 100,
  maxWindowMs: 1000,
  msPerMember: 0.5,
  maxChanges: 1000,
};

/**
 * A presence change as it travels between nodes: the member, and the room's count read after the
 * change (with its place in the presence sequence), so each node can tell a large room and the
 * newest count without asking the store.
 */
export interface MemberChange {
  joined: boolean;
  member: Member;
  count?: MemberCount;
}

/** The data of a presence publication (see MemberChange). */
export function memberChangeData(member: Member, count: MemberCount | undefined): string {
  const member_ = JSON.stringify(member);
  return count === undefined
    ? `{"member":${member_}}`
    : `{"count":${count.count},"seq":${count.seq},"member":${member_}}`;
}

/** Reads a presence publication; a bare member (as older nodes sent) has no count. */
export function readMemberChange(publication: RoomEvent): MemberChange | undefined {
  let value: unknown;
  try {
    value = JSON.parse(publication.data);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const record = value as { member?: unknown; count?: unknown; seq?: unknown; user?: unknown };
  const member = (record.member ?? (typeof record.user === 'string' ? record : undefined)) as Member | undefined;
  if (typeof member !== 'object' || member === null || typeof member.user !== 'string') return undefined;
  const change: MemberChange = { joined: publication.event === '$member.joined', member: toMember(member) };
  if (typeof record.count === 'number' && typeof record.seq === 'number') {
    change.count = { count: record.count, seq: record.seq };
  }
  return change;
}

function toMember(member: Member): Member {
  const out: Member = { user: member.user };
  if (member.info !== undefined) out.info = member.info;
  return out;
}

/**
 * One room's presence on one node. Small until a change (or a page's join) shows more than the
 * threshold; then large for as long as the room has pages on this node, so a page that was given a
 * partial list only ever gets `members` frames with a count. Holds the changes of the open window
 * (each user once: the last change wins) and the newest count seen.
 */
export class MemberWindow {
  large = false;
  #count: MemberCount | undefined;
  readonly #joined = new Map<string, Member>();
  readonly #left = new Set<string>();
  timer: NodeJS.Timeout | undefined;

  /** Keeps the newer of two counts. */
  note(count: MemberCount | undefined): void {
    if (count && (this.#count === undefined || count.seq >= this.#count.seq)) this.#count = count;
  }

  get count(): number {
    return this.#count?.count ?? 0;
  }

  /** Adds a change to the window; answers how many users the window holds. */
  add(change: MemberChange): number {
    const { user } = change.member;
    if (change.joined) {
      this.#left.delete(user);
      this.#joined.set(user, change.member);
    } else {
      this.#joined.delete(user);
      this.#left.add(user);
    }
    return this.#joined.size + this.#left.size;
  }

  /** How long a window of this room lasts. */
  windowMs(scale: MemberScale): number {
    return Math.min(scale.maxWindowMs, Math.max(scale.minWindowMs, this.count * scale.msPerMember));
  }

  /** The JSON text of the window's `members` frame, which then starts empty. */
  take(room: string): string {
    let text = `{"t":"members","room":${JSON.stringify(room)}`;
    if (this.#count !== undefined) text += `,"count":${this.#count.count}`;
    text += ',"joined":[';
    let first = true;
    for (const member of this.#joined.values()) {
      text += (first ? '' : ',') + JSON.stringify(member);
      first = false;
    }
    text += `],"left":${JSON.stringify([...this.#left])}}`;
    this.#joined.clear();
    this.#left.clear();
    return text;
  }
}
