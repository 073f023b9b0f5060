import {
  GROUP_MAX_PAGES,
  GROUP_UNIT_FROM,
  type GroupMode,
  type GroupPeer,
  type GroupPeerLeftFrame,
  type IceServer,
} from '@realtime/protocol';
import type { Logger } from 'pino';
import { iceServers } from '../calls/ice.js';
import type { IceConfig } from '../calls/options.js';
import type { EventSink } from '../core/events.js';
import { type NodeRegistry, SWEEP_BATCH } from '../core/node-registry.js';
import type { GroupMember, GroupStore } from '../engines/types.js';
import type { UnitSignal } from '../units/unit-signal.js';
import { type GroupSignals, type GroupUnitHost, GroupUnits } from './group-units.js';

export interface GroupServiceDeps {
  node: string;
  groups: GroupStore;
  /** The node leases: the pages of a dead node leave their group calls, taken by the node that claims it. */
  nodes: Pick<NodeRegistry, 'onLapse'>;
  signals: GroupSignals;
  events: EventSink;
  log: Logger;
  now: () => number;
  ice?: IceConfig;
  /** This node's forwarding units (shared with live streams), for groups in unit mode. */
  units: GroupUnitHost;
  /** Pages per group call; default GROUP_MAX_PAGES. */
  maxPages?: number;
  /** The pages at which a group leaves the mesh for units; default GROUP_UNIT_FROM. */
  unitFrom?: number;
}

const peerOf = (member: GroupMember): GroupPeer => ({ page: member.page, user: member.user, media: member.media });

/** Where a signal of a group page goes: its group's mode, and whether its target is in the group. */
export interface GroupRoute {
  unit: boolean;
  /** The signal's target page is in the group now. */
  present: boolean;
}

/**
 * Group calls, the same on every node: the store keeps who is in each group and its mode; joins and
 * departures are told to the other pages through PageSignals and reported once (`group.joined`,
 * `group.left`). In unit mode the pages' media goes through GroupUnits.
 */
export class GroupService {
  readonly #deps: GroupServiceDeps;
  /** The groups of the pages on this node, by page id: left when the page closes. */
  readonly #pageGroups = new Map<string, Set<string>>();
  readonly #units: GroupUnits;

  constructor(deps: GroupServiceDeps) {
    this.#deps = deps;
    this.#units = new GroupUnits({
      units: deps.units,
      signals: deps.signals,
      log: deps.log,
      pages: async (app, group) => (await deps.groups.members(app, group)).map((member) => member.page),
    });
    deps.nodes.onLapse('group calls', async ({ node }) => {
      const now = deps.now();
      const taken = await deps.groups.takeNode(node, SWEEP_BATCH);
      for (const { app, group, member } of taken) await this.#left(app, group, member, now);
      return taken.length < SWEEP_BATCH ? 'done' : 'more';
    });
  }

  async start(): Promise<void> {
    this.#units.start();
  }

  ice(user: string): IceServer[] {
    return iceServers(this.#deps.ice, user, this.#deps.now());
  }

  /** How many group calls a page here is in. */
  groupsOf(page: string): number {
    return this.#pageGroups.get(page)?.size ?? 0;
  }

  /** Whether a page here is in the group (frames of pages not in it are refused). */
  isIn(page: string, group: string): boolean {
    return this.#pageGroups.get(page)?.has(group) === true;
  }

  /**
   * Adds a page: the peers there before it and the group's mode, `full` or `already`. The others are
   * told (of the switch to unit mode first, when this join made it); `group.joined` is reported.
   */
  async join(
    app: string,
    group: string,
    member: GroupMember,
  ): Promise<{ peers: GroupPeer[]; mode: GroupMode } | 'full' | 'already'> {
    const limits = { max: this.#deps.maxPages ?? GROUP_MAX_PAGES, unitFrom: this.#deps.unitFrom ?? GROUP_UNIT_FROM };
    const joined = await this.#deps.groups.join(app, group, member, limits);
    if (joined === 'full' || joined === 'already') return joined;
    const { before } = joined;
    let groups = this.#pageGroups.get(member.page);
    if (!groups) {
      groups = new Set();
      this.#pageGroups.set(member.page, groups);
    }
    groups.add(group);
    if (joined.switched) await this.#tell(app, before, { t: 'group.mode', group, mode: 'unit' });
    await this.#tell(app, before, { t: 'group.peer-joined', group, ...peerOf(member) });

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
    return { peers: before.map(peerOf), mode: joined.unit ? 'unit' : 'mesh' };
  }

  /**
   * After `group.joined` of a page in a unit-mode group: each page there offers it its media from its
   * unit (those whose units are up now; the others once theirs are).
   */
  offerPeers(app: string, group: string, page: string, peers: readonly GroupPeer[]): Promise<void> {
    return this.#units.joined(
      app,
      group,
      page,
      peers.map((peer) => peer.page),
    );
  }

  /** Takes a page out; false when it was not in. */
  async leave(app: string, group: string, page: string): Promise<boolean> {
    this.#pageGroups.get(page)?.delete(group);
    const member = await this.#deps.groups.leave(app, group, page);
    if (!member) return false;
    await this.#left(app, group, member, this.#deps.now());
    return true;
  }

  /** Where a signal to `to` goes: whether the group is in unit mode, and whether `to` is in it (on any node). */
  async route(app: string, group: string, to: string): Promise<GroupRoute> {
    const [members, unit] = await Promise.all([
      this.#deps.groups.members(app, group),
      this.#deps.groups.unit(app, group),
    ]);
    return { unit, present: members.some((member) => member.page === to) };
  }

  /** A mesh signal: to the page itself. */
  signal(app: string, to: string, frame: object): Promise<void> {
    return this.#deps.signals.toPage(app, to, frame);
  }

  /** A unit-mode signal of page `from` here: to its own unit (`to` is itself), or to the unit of `to`. */
  unitSignal(app: string, group: string, from: string, to: string, signal: UnitSignal): Promise<void> {
    return from === to ? this.#units.send(app, group, from, signal) : this.#units.receive(app, group, to, from, signal);
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

  async close(): Promise<void> {}

  async #left(app: string, group: string, member: GroupMember, leftAt: number): Promise<void> {
    const frame: GroupPeerLeftFrame = { t: 'group.peer-left', group, page: member.page, user: member.user };
    try {
      const [members, unit] = await Promise.all([
        this.#deps.groups.members(app, group),
        this.#deps.groups.unit(app, group),
      ]);
      await this.#tell(app, members, frame);
      // Its unit (if it had one here) ends with it; in unit mode its sessions on the others' units close.
      await this.#units.left(app, group, member.page, unit ? members.map((m) => m.page) : []);
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
