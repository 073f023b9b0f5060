/**
 * Group calls over the page socket (docs/calls.md): pages join a group call by the name their call
 * token gives; the service tells each page who is there and who comes and goes, and carries the
 * WebRTC signals of the group. `group.signal` to page X always concerns X's media:
 *
 * - **mesh** (a small group): the signals go to X itself. A page that joins makes an offer to each
 *   page already there; media flows page to page.
 * - **unit** (from GROUP_UNIT_FROM pages on, until the group empties): each page sends its media
 *   once, to a forwarding unit the service runs for it, and receives each other page's media from
 *   that page's unit. A page sends its own offer and candidates with `to` its own page id (the unit
 *   answers with `from` its page id); a page's unit offers its media to each other page with
 *   `from` that page, and the other page answers with `to` that page. `{ restart: true }` to X asks
 *   X's unit for a fresh offer; `{ restart: true }` from the page's own id says its unit lost its
 *   media: offer again.
 *
 * A group starts in mesh; the join that brings it to GROUP_UNIT_FROM pages switches it to unit
 * (`group.mode` to the pages there, `mode` in the newcomer's `group.joined`), and it stays in unit
 * mode until its last page leaves.
 */
import type { IceServer } from './calls.js';
import type { WebhookMedia } from './webhook-events.js';

/** How a group call's media flows: page to page, or through a forwarding unit per page. */
export type GroupMode = 'mesh' | 'unit';

/** Another page in the group call. */
export interface GroupPeer {
  /** The page's id: signals to it name it in `to`. */
  page: string;
  user: string;
  media: WebhookMedia[];
}

// Frames a page sends.
export interface GroupJoinFrame {
  t: 'group.join';
  ref: number;
  /** The group call's name: must be the call token's `group`. */
  group: string;
  /** A call token (calls key) for this page's user with `group`. */
  token: string;
}
export interface GroupLeaveFrame {
  t: 'group.leave';
  ref: number;
  group: string;
}
/**
 * A WebRTC description or ICE candidate for one page of the group (mesh: carried as is), or in unit
 * mode for that page's unit (also `{ restart: true }`, and `{ video }`: VideoSignalData). At most
 * 64 KB.
 */
export interface GroupSignalFrame {
  t: 'group.signal';
  group: string;
  /** The page it is for. */
  to: string;
  data: Record<string, unknown>;
}

export type GroupClientFrame = GroupJoinFrame | GroupLeaveFrame | GroupSignalFrame;

// Frames the service sends.
/** Answers `group.join`: the pages there before this one (make an offer to each). */
export interface GroupJoinedFrame {
  t: 'group.joined';
  ref: number;
  group: string;
  /** This page's id in the group. */
  page: string;
  peers: GroupPeer[];
  ice: IceServer[];
  /** `mesh`: offer to each peer. `unit`: offer to this page's own unit (`to` its own page id). */
  mode: GroupMode;
}
/** Answers `group.leave`. */
export interface GroupLeftFrame {
  t: 'group.left';
  ref: number;
  group: string;
}
/** A page joined the group call: its offer follows. */
export interface GroupPeerJoinedFrame extends GroupPeer {
  t: 'group.peer-joined';
  group: string;
}
/**
 * The group call grew to GROUP_UNIT_FROM pages and now goes through forwarding units: close the
 * page-to-page connections and offer this page's media to its own unit (`to` its own page id).
 */
export interface GroupModeFrame {
  t: 'group.mode';
  group: string;
  mode: 'unit';
}
/** A page left the group call (left, closed, or its node died). */
export interface GroupPeerLeftFrame {
  t: 'group.peer-left';
  group: string;
  page: string;
  user: string;
}
/** A signal from another page of the group. */
export interface GroupSignalInFrame {
  t: 'group.signal';
  group: string;
  from: string;
  data: Record<string, unknown>;
}

export type GroupServerFrame =
  | GroupJoinedFrame
  | GroupLeftFrame
  | GroupPeerJoinedFrame
  | GroupPeerLeftFrame
  | GroupModeFrame
  | GroupSignalInFrame;

/**
 * The pages at which a group call leaves the mesh for forwarding units: in a mesh every page sends
 * its media to each other page, and at five video pages Chromium on a two-core machine spends most
 * of a core encoding four copies (docs/calls.md, "Performance").
 */
export const GROUP_UNIT_FROM = 5;

/**
 * Pages in one group call at most: through units each page still decodes every other page's video,
 * and the units forward each page's media to all the others (pages x (pages - 1) sessions).
 * docs/calls.md gives the measurement behind the number.
 */
export const GROUP_MAX_PAGES = 12;

/** Group calls one page is in at once (each holds a connection, and in unit mode a unit). */
export const GROUPS_PER_PAGE = 8;
