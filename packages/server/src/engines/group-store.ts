import type { MaybePromise } from './maybe-promise.js';

/** A page in a group call. */
export interface GroupMember {
  page: string;
  user: string;
  media: ('audio' | 'video')[];
  joinedAt: number;
}

/** A member whose page's node died, taken to be reported as gone. */
export interface LapsedMember {
  app: string;
  group: string;
  member: GroupMember;
}

/** How many pages a group call takes, and from how many on its media goes through forwarding units. */
export interface GroupLimits {
  max: number;
  unitFrom: number;
}

/** A page that joined a group call: who was there, and how the group's media flows now. */
export interface GroupJoin {
  before: GroupMember[];
  /** The group is in unit mode (it reached `unitFrom` pages since it last was empty). */
  unit: boolean;
  /** This join switched it to unit mode: true for exactly one join per switch. */
  switched: boolean;
}

/**
 * Group calls, counted over every node. Contract:
 * - A group holds at most `max` pages; a page is in it at most once.
 * - The join that brings a group to `unitFrom` pages switches it to unit mode, once; it stays in
 *   unit mode until its last page is out (then a new group of that name starts in mesh).
 * - Each departure (`leave`, `takeNode`) hands the member to exactly one caller, so each
 *   `group.left` is reported once, by one node.
 * - The members of a node that died are taken by the node that claimed the dead one (NodeStore).
 */
export interface GroupStore {
  /**
   * Adds a page to a group call: the members there before it, `full` when it holds `max` already,
   * `already` when the page is in it (nothing changes then).
   */
  join(
    app: string,
    group: string,
    member: GroupMember,
    limits: GroupLimits,
  ): MaybePromise<GroupJoin | 'full' | 'already'>;
  /** Takes a page out; answers its member record to one caller only, undefined when it was not in. */
  leave(app: string, group: string, page: string): MaybePromise<GroupMember | undefined>;
  /** The members now, in the order they joined. */
  members(app: string, group: string): MaybePromise<GroupMember[]>;
  /** Whether the group is in unit mode now. */
  unit(app: string, group: string): MaybePromise<boolean>;
  /**
   * Claims up to `limit` members whose page is on `node` (a dead node); each is removed and handed out
   * once. Fewer than `limit`: the node has none left.
   */
  takeNode(node: string, limit: number): MaybePromise<LapsedMember[]>;
  close(): MaybePromise<void>;
}
