/**
 * Group calls over the page socket (docs/calls.md): pages join a group call by the name their call
 * token gives; the service tells each page who is there and who comes and goes, and carries the
 * WebRTC signals between two pages of the group. Media is a mesh: a page that joins makes an offer
 * to each page already there.
 */
import type { IceServer } from './calls.js';
import type { WebhookMedia } from './webhook-events.js';

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
/** A WebRTC description or ICE candidate for one page of the group: carried as is, at most 64 KB. */
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
  | GroupSignalInFrame;

/**
 * Pages in one group call at most: every page sends its media to each other page (a mesh), so its
 * upload grows with the group. docs/calls.md gives the measurement behind the number.
 */
export const GROUP_MAX_PAGES = 8;
