import { nodeOfPage } from '../node-id.js';
import type { GroupJoin, GroupLimits, GroupMember, GroupStore, LapsedMember } from '../types.js';

/** Group calls in this process's memory: the embedded engine's, where one process is every node. Answers at once. */
export class MemoryGroupStore implements GroupStore {
  /** Members by `app\0group`, then by page, in the order they joined. */
  readonly #groups = new Map<string, Map<string, GroupMember>>();
  /** The `app\0group` keys of groups in unit mode; a key goes with its group's last member. */
  readonly #unit = new Set<string>();

  join(app: string, group: string, member: GroupMember, limits: GroupLimits): GroupJoin | 'full' | 'already' {
    const key = `${app}\u0000${group}`;
    let members = this.#groups.get(key);
    if (members?.has(member.page)) return 'already';
    if ((members?.size ?? 0) >= limits.max) return 'full';
    const before = members ? [...members.values()].map(copy) : [];
    if (!members) {
      members = new Map();
      this.#groups.set(key, members);
    }
    members.set(member.page, copy(member));
    // At or past the threshold rather than at it exactly, so a group whose threshold was lowered
    // (another node's settings) switches at its next join.
    const switched = !this.#unit.has(key) && members.size >= unitFromOf(limits.unitFrom);
    if (switched) this.#unit.add(key);
    return { before, unit: this.#unit.has(key), switched };
  }

  leave(app: string, group: string, page: string): GroupMember | undefined {
    const key = `${app}\u0000${group}`;
    const members = this.#groups.get(key);
    const member = members?.get(page);
    if (!members || !member) return undefined;
    members.delete(page);
    if (members.size === 0) {
      this.#groups.delete(key);
      this.#unit.delete(key);
    }
    return copy(member);
  }

  members(app: string, group: string): GroupMember[] {
    return [...(this.#groups.get(`${app}\u0000${group}`)?.values() ?? [])].map(copy);
  }

  unit(app: string, group: string): boolean {
    return this.#unit.has(`${app}\u0000${group}`);
  }

  takeNode(node: string, limit: number): LapsedMember[] {
    const taken: LapsedMember[] = [];
    for (const [key, members] of this.#groups) {
      const cut = key.indexOf('\u0000');
      for (const member of members.values()) {
        if (taken.length >= limit) return taken;
        if (nodeOfPage(member.page) !== node) continue;
        const app = key.slice(0, cut);
        const group = key.slice(cut + 1);
        const left = this.leave(app, group, member.page);
        if (left) taken.push({ app, group, member: left });
      }
    }
    return taken;
  }

  close(): void {}
}

/** NaN as 0, as the Redis store reads it (a number Lua can compare): the first join switches. */
function unitFromOf(unitFrom: number): number {
  return Number.isNaN(unitFrom) ? 0 : unitFrom;
}

function copy(member: GroupMember): GroupMember {
  return { ...member, media: [...member.media] };
}
