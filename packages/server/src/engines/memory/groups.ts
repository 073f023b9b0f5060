import { nodeOfPage } from '../node-id.js';
import type { GroupMember, GroupStore, LapsedMember } from '../types.js';

/** Group calls in this process's memory: the embedded engine's, where one process is every node. Answers at once. */
export class MemoryGroupStore implements GroupStore {
  /** Members by `app\0group`, then by page, in the order they joined. */
  readonly #groups = new Map<string, Map<string, GroupMember>>();
  readonly #nodes = new Map<string, number>();

  join(app: string, group: string, member: GroupMember, max: number): GroupMember[] | 'full' | 'already' {
    const key = `${app}\u0000${group}`;
    let members = this.#groups.get(key);
    if (members?.has(member.page)) return 'already';
    if ((members?.size ?? 0) >= max) return 'full';
    const before = members ? [...members.values()].map(copy) : [];
    if (!members) {
      members = new Map();
      this.#groups.set(key, members);
    }
    members.set(member.page, copy(member));
    return before;
  }

  leave(app: string, group: string, page: string): GroupMember | undefined {
    const key = `${app}\u0000${group}`;
    const members = this.#groups.get(key);
    const member = members?.get(page);
    if (!members || !member) return undefined;
    members.delete(page);
    if (members.size === 0) this.#groups.delete(key);
    return copy(member);
  }

  members(app: string, group: string): GroupMember[] {
    return [...(this.#groups.get(`${app}\u0000${group}`)?.values() ?? [])].map(copy);
  }

  renew(node: string, untilMs: number): void {
    this.#nodes.set(node, untilMs);
  }

  takeLapsed(nowMs: number, limit: number): LapsedMember[] {
    const lapsed: LapsedMember[] = [];
    for (const [key, members] of this.#groups) {
      const cut = key.indexOf('\u0000');
      for (const member of members.values()) {
        if (lapsed.length >= limit) return lapsed;
        if ((this.#nodes.get(nodeOfPage(member.page)) ?? Number.NEGATIVE_INFINITY) > nowMs) continue;
        const app = key.slice(0, cut);
        const group = key.slice(cut + 1);
        const taken = this.leave(app, group, member.page);
        if (taken) lapsed.push({ app, group, member: taken });
      }
    }
    return lapsed;
  }

  close(): void {}
}

function copy(member: GroupMember): GroupMember {
  return { ...member, media: [...member.media] };
}
