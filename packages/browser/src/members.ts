import { isRecord, type Member } from '@realtime/protocol';

/** Reads a `{ user, info? }` member; undefined for anything else. */
export function toMember(value: unknown): Member | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { user, info } = value as { user?: unknown; info?: unknown };
  if (typeof user !== 'string') return undefined;
  if (isRecord(info)) return { user, info };
  return { user };
}

/** The members of a presence room, each user once. */
export class Members {
  readonly #byUser = new Map<string, Member>();

  get size(): number {
    return this.#byUser.size;
  }

  list(): Member[] {
    return [...this.#byUser.values()];
  }

  has(user: string): boolean {
    return this.#byUser.has(user);
  }

  /** Adds or updates a member; true when the user was not a member. */
  add(member: Member): boolean {
    const isNew = !this.#byUser.has(member.user);
    this.#byUser.set(member.user, member);
    return isNew;
  }

  /** Removes a member and answers them; undefined when the user was not a member. */
  take(user: string): Member | undefined {
    const member = this.#byUser.get(user);
    this.#byUser.delete(user);
    return member;
  }

  /** True when the user was a member. */
  remove(user: string): boolean {
    return this.#byUser.delete(user);
  }

  /** Replaces every member (a `joined` frame's list) and returns who came and who went. */
  replace(members: readonly unknown[]): { joined: Member[]; left: Member[] } {
    const next = new Map<string, Member>();
    for (const value of members) {
      const member = toMember(value);
      if (member) next.set(member.user, member);
    }
    const joined = [...next.values()].filter((member) => !this.#byUser.has(member.user));
    const left = [...this.#byUser.values()].filter((member) => !next.has(member.user));
    this.#byUser.clear();
    for (const [user, member] of next) this.#byUser.set(user, member);
    return { joined, left };
  }

  clear(): void {
    this.#byUser.clear();
  }
}
