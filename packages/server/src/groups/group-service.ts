import { GROUP_MAX_PAGES, type GroupPeer, type GroupPeerLeftFrame, type IceServer } from '@realtime/protocol';
import type { Logger } from 'pino';
import { iceServers } from '../calls/ice.js';
import type { IceConfig } from '../calls/options.js';
import type { EventSink } from '../core/events.js';
import type { PageSignals } from '../core/page-signals.js';
import { StoreLease, SWEEP_BATCH } from '../core/store-lease.js';
import type { GroupMember, GroupStore } from '../engines/types.js';

/** A node that has not renewed for this long is dead: its pages leave their group calls. */
export const GROUP_LEASE_MS = 15_000;

export interface GroupServiceDeps {
  node: string;
  groups: GroupStore;
  signals: PageSignals;
  events: EventSink;
  log: Logger;
  now: () => number;
  ice?: IceConfig;
  /** Pages per group call; default GROUP_MAX_PAGES. */
  maxPages?: number;
  leaseMs?: number;
}

const peerOf = (member: GroupMember): GroupPeer => ({ page: member.page, user: member.user, media: member.media });

/**
 * Group calls, the same on every node: the store keeps who is in each group; joins and departures
 * are told to the other pages through PageSignals and reported once (`group.joined`, `group.left`).
 */
export class GroupService {
  readonly #deps: GroupServiceDeps;
  /** The groups of the pages on this node, by page id: left when the page closes. */
  readonly #pageGroups = new Map<string, Set<string>>();
  readonly #lease: StoreLease;

  constructor(deps: GroupServiceDeps) {
    this.#deps = deps;
    const leaseMs = deps.leaseMs ?? GROUP_LEASE_MS;
    this.#lease = new StoreLease({
      leaseMs,
      sweepMs: 2000,
      log: deps.log,
      what: 'group calls',
      renew: () => deps.groups.renew(deps.node, deps.now() + leaseMs),
      sweep: async () => {
        const now = deps.now();
        for (const { app, group, member } of await deps.groups.takeLapsed(now, SWEEP_BATCH)) {
          await this.#left(app, group, member, now);
        }
      },
    });
  }

  /** Takes this node's lease before any page here uses it, then renews it and sweeps on timers. */
  start(): Promise<void> {
    return this.#lease.start();
  }

  ice(user: string): IceServer[] {
    return iceServers(this.#deps.ice, user, this.#deps.now());
  }

  /** Whether a page here is in the group (frames of pages not in it are refused). */
  isIn(page: string, group: string): boolean {
    return this.#pageGroups.get(page)?.has(group) === true;
  }

  /** Adds a page: the peers there before it, `full` or `already`. The others are told; `group.joined` is reported. */
  async join(app: string, group: string, member: GroupMember): Promise<GroupPeer[] | 'full' | 'already'> {
    const before = await this.#deps.groups.join(app, group, member, this.#deps.maxPages ?? GROUP_MAX_PAGES);
    if (before === 'full' || before === 'already') return before;
    let groups = this.#pageGroups.get(member.page);
    if (!groups) {
      groups = new Set();
      this.#pageGroups.set(member.page, groups);
    }
    groups.add(group);
    const joined = { t: 'group.peer-joined', group, ...peerOf(member) };
    await this.#tell(app, before, joined);
    try {
      await this.#deps.events.record(app, {
        type: 'group.joined',
        call: group,
        user: member.user,
        media: member.media,
        joined_at: member.joinedAt,
      });
    } catch (error) {
      this.#deps.log.error({ err: error, app, group }, 'recording group.joined failed');
    }
    return before.map(peerOf);
  }

  /** Takes a page out; false when it was not in. */
  async leave(app: string, group: string, page: string): Promise<boolean> {
    this.#pageGroups.get(page)?.delete(group);
    const member = await this.#deps.groups.leave(app, group, page);
    if (!member) return false;
    await this.#left(app, group, member, this.#deps.now());
    return true;
  }

  /** Whether `page` is in the group now, on any node (a signal's target). */
  async has(app: string, group: string, page: string): Promise<boolean> {
    return (await this.#deps.groups.members(app, group)).some((member) => member.page === page);
  }

  signal(app: string, to: string, frame: object): Promise<void> {
    return this.#deps.signals.toPage(app, to, frame);
  }

  /** A page closed: it leaves each of its group calls. */
  async pageClosed(app: string, page: string): Promise<void> {
    const groups = this.#pageGroups.get(page);
    this.#pageGroups.delete(page);
    for (const group of groups ?? []) {
      try {
        const member = await this.#deps.groups.leave(app, group, page);
        if (member) await this.#left(app, group, member, this.#deps.now());
      } catch (error) {
        this.#deps.log.error({ err: error, app, group }, 'taking a closed page out of its group call failed');
      }
    }
  }

  /** Takes out the members of dead nodes. Never throws. */
  sweep(): Promise<void> {
    return this.#lease.sweep();
  }

  async close(): Promise<void> {
    this.#lease.close();
  }

  async #left(app: string, group: string, member: GroupMember, leftAt: number): Promise<void> {
    const frame: GroupPeerLeftFrame = { t: 'group.peer-left', group, page: member.page, user: member.user };
    try {
      await this.#tell(app, await this.#deps.groups.members(app, group), frame);
    } catch (error) {
      this.#deps.log.error({ err: error, app, group }, 'telling a group call a page left failed');
    }
    try {
      await this.#deps.events.record(app, {
        type: 'group.left',
        call: group,
        user: member.user,
        media: member.media,
        joined_at: member.joinedAt,
        left_at: leftAt,
        seconds: Math.max(0, Math.floor((leftAt - member.joinedAt) / 1000)),
      });
    } catch (error) {
      this.#deps.log.error({ err: error, app, group }, 'recording group.left failed');
    }
  }

  /** One frame to each of the pages; failures are logged, the others still get it. */
  async #tell(app: string, members: readonly GroupMember[], frame: object): Promise<void> {
    const sent = await Promise.allSettled(members.map((m) => this.#deps.signals.toPage(app, m.page, frame)));
    for (const result of sent) {
      if (result.status === 'rejected')
        this.#deps.log.error({ err: result.reason, app }, 'a group call frame was lost');
    }
  }
}
