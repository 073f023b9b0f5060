import type { Member } from '@realtime/protocol';
import type { MaybePromise } from './maybe-promise.js';
import type { NodeClaim } from './node-store.js';

/** A user whose `user.offline` is due, handed to one node to report. */
export interface GoneUser {
  app: string;
  user: string;
}

/**
 * Who is where, counted over every node. Pages are named by their id (which carries the node's id).
 * - A user is online from their first open page until the offline delay after their last page closed,
 *   unless a page came back in between (then no `user.offline`: no flapping).
 * - A room is occupied while any page is in it; presence rooms list each user once.
 * Every answer that starts a webhook event (`true` of pageOpened/enterRoom/exitRoom/joinRoom/
 * leaveRoom, each user of takeOffline) is given to exactly one caller, so it is reported once.
 */
export interface PresenceStore {
  /** A page opened as a user; true when the user came online (so `user.online` is reported). */
  pageOpened(app: string, user: string, page: string, nowMs: number): MaybePromise<boolean>;
  /** A page closed; after the user's last, their `user.offline` falls due after the offline delay. */
  pageClosed(app: string, user: string, page: string, nowMs: number): MaybePromise<void>;
  /** Claims up to `limit` users whose `user.offline` is due; each is handed out once, to one caller. */
  takeOffline(nowMs: number, limit: number): MaybePromise<GoneUser[]>;
  /** For each id, whether the user is online now. */
  online(app: string, users: readonly string[], nowMs: number): MaybePromise<boolean[]>;
  /** How many pages the user has open on all nodes (an ask waits for that many answers at most). */
  userPages(app: string, user: string): MaybePromise<number>;
  /** A page took a seat in a room; true when the room had no page on any node (`room.occupied`). */
  enterRoom(app: string, room: string, page: string): MaybePromise<boolean>;
  /** A page left a room; true when it was the room's last page on any node (`room.vacated`). */
  exitRoom(app: string, room: string, page: string): MaybePromise<boolean>;
  /** Adds a page to a presence room; true when it is the user's first page there. */
  joinRoom(app: string, room: string, member: Member, page: string): MaybePromise<boolean>;
  /** Removes a page from a presence room; true when it was the user's last page there. */
  leaveRoom(app: string, room: string, user: string, page: string): MaybePromise<boolean>;
  /** The members of a presence room, each user once, in the order they joined (every one: small rooms, tools). */
  members(app: string, room: string): MaybePromise<Member[]>;
  /**
   * Up to `limit` members in join order, after the member `after` points at (a `cursor` of an earlier
   * page; none: from the first), with the room's count. Walking the cursors gives each member who
   * stays in the room exactly once, whoever joins or leaves meanwhile (a user who leaves and comes
   * back goes to the end).
   */
  memberPage(app: string, room: string, page: { after?: string; limit: number }): MaybePromise<MemberPage>;
  /** How many members the room has, read at one point of the presence sequence (see MemberCount). */
  memberCount(app: string, room: string): MaybePromise<MemberCount>;
  /**
   * The app's users with a page open on any node (a user in the offline delay has none), by id in
   * code point order (UTF-8 byte order), each with their pages: a listing that never walks the store.
   */
  onlineUsers(app: string, range: NameRange): MaybePromise<{ users: OnlineUser[]; more: boolean }>;
  /** The app's rooms with a page in them on any node, by name as onlineUsers, with pages and presence members. */
  occupiedRooms(app: string, range: NameRange): MaybePromise<{ rooms: OccupiedRoom[]; more: boolean }>;
  /** One room's pages on every node and its presence members, read together (both 0 when nobody is in it). */
  roomSize(app: string, room: string): MaybePromise<RoomSize>;
  /**
   * The pages of `node` that hold anything here (open as a user, seated in a room, a presence
   * member): what a live node checks against the pages it really has, to close those whose records
   * outlived them (their close could not be written).
   */
  nodePages(node: string): MaybePromise<string[]>;
  /**
   * Takes the given pages out of every room, presence room and user, as their closes would (what a
   * close did already stays done), and answers what that ended for the caller to report. Each
   * departure is answered once, whoever else closes or sweeps the same pages at the same time.
   * One step: callers give a bounded list (a hundred pages or so) at a time.
   */
  closePages(pages: readonly string[], nowMs: number): MaybePromise<Departure[]>;
  /**
   * Takes up to `limit` pages of a dead node (`claim`, from the NodeStore) out of every room, presence
   * room and user, as their closes would have, and answers what that ended for the caller to report,
   * and whether the node has no page left to take. Each departure is answered once, whoever else
   * sweeps or closes the same pages at the same time; users left with no page fall due for
   * `user.offline` as usual (takeOffline). The first sweep of each lapse sets the node's pages apart:
   * what the node opens after it (it was alive after all, and renewed) goes only with a later lapse.
   */
  sweepNode(claim: NodeClaim, nowMs: number, limit: number): MaybePromise<{ departures: Departure[]; done: boolean }>;
  close(): MaybePromise<void>;
}

/**
 * A presence room's member count, with the place in the store's presence sequence it was read at:
 * every member change of the room (a user's first page joined, their last page left) takes a higher
 * number than any the room had before, on every node and also after the room emptied, so of two reads
 * of a room, the one with the higher `seq` is the newer. One sequence may serve every room (one
 * process), or each room its own (Redis, where rooms are spread over shards).
 */
export interface MemberCount {
  count: number;
  seq: number;
}

/** One page of a presence room's members; `cursor` (1 to 16 digits) is set when more may follow. */
export interface MemberPage extends MemberCount {
  members: Member[];
  cursor?: string;
}

/**
 * Which names a listing answers, in code point order: the first `limit` after `after` (none: from the
 * first) that start with `prefix` (none: any); `more` says whether others follow.
 */
export interface NameRange {
  limit: number;
  after?: string;
  prefix?: string;
}

export interface OnlineUser {
  user: string;
  /** Pages the user has open, on every node. */
  pages: number;
}

/** How many are in a room, on every node. */
export interface RoomSize {
  /** Pages seated in the room. */
  pages: number;
  /** Presence members: users whose page joined it as a presence member, each once (memberCount). */
  members: number;
}

export interface OccupiedRoom extends RoomSize {
  room: string;
}

/** What the pages of a dead node ended: a member left a presence room, or a room has no page left. */
export type Departure =
  | { type: 'member.left'; app: string; room: string; member: Member }
  | { type: 'room.vacated'; app: string; room: string };
