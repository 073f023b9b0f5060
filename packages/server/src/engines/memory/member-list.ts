import type { Member } from '@realtime/protocol';

interface Entry {
  seq: number;
  member: Member;
  pages: Set<string>;
  gone: boolean;
}

/**
 * The members of one presence room in join order, each with the sequence number it joined at, so a
 * page of members after a cursor (a sequence number) is a binary search and a slice, whatever size the
 * room has. Members who left are marked and compacted away once they are most of the list.
 */
export class MemberList {
  #order: Entry[] = [];
  readonly #byUser = new Map<string, Entry>();
  #gone = 0;

  get size(): number {
    return this.#byUser.size;
  }

  /** Adds a page; true when it is the user's first (the member joined, at `seq()`). */
  add(member: Member, page: string, seq: () => number): boolean {
    const entry = this.#byUser.get(member.user);
    if (entry) {
      entry.pages.add(page);
      return false;
    }
    const fresh: Entry = { seq: seq(), member, pages: new Set([page]), gone: false };
    this.#byUser.set(member.user, fresh);
    this.#order.push(fresh);
    return true;
  }

  /** Removes a page; true when it was the user's last (the member left). */
  remove(user: string, page: string): boolean {
    const entry = this.#byUser.get(user);
    if (!entry?.pages.delete(page) || entry.pages.size > 0) return false;
    this.#byUser.delete(user);
    entry.gone = true;
    this.#gone++;
    if (this.#gone > 64 && this.#gone * 2 > this.#order.length) this.#compact();
    return true;
  }

  /** The member a user joined as, while they are in the room. */
  get(user: string): Member | undefined {
    return this.#byUser.get(user)?.member;
  }

  all(): Member[] {
    return [...this.#byUser.values()].map((entry) => entry.member);
  }

  /** Up to `limit` members who joined after sequence number `after`, and the last one's number. */
  page(after: number, limit: number): { members: Member[]; last: number | undefined; more: boolean } {
    let low = 0;
    let high = this.#order.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.#order[mid] as Entry).seq <= after) low = mid + 1;
      else high = mid;
    }
    const members: Member[] = [];
    let last: number | undefined;
    let i = low;
    for (; i < this.#order.length && members.length < limit; i++) {
      const entry = this.#order[i] as Entry;
      if (entry.gone) continue;
      members.push(entry.member);
      last = entry.seq;
    }
    while (i < this.#order.length && (this.#order[i] as Entry).gone) i++;
    return { members, last, more: i < this.#order.length };
  }

  #compact(): void {
    this.#order = this.#order.filter((entry) => !entry.gone);
    this.#gone = 0;
  }
}
