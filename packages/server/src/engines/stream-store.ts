import type { MaybePromise } from './maybe-promise.js';

/** A page on a live stream: presenting, or watching (without `user`: a visitor, never reported). */
export interface StreamMember {
  page: string;
  user?: string;
  role: 'presenter' | 'viewer';
}

/** A signed-in person on a stream while it is live: `stream.joined`. */
export interface StreamWatch {
  /** Pairs the `stream.joined` with its `stream.left`: unique per pair. */
  watch: string;
  user: string;
  role: 'presenter' | 'viewer';
  joinedAt: number;
}

/** A watch that closed: `stream.left` (`seconds` is live time: `leftAt - joinedAt`). */
export interface StreamWatchEnd extends StreamWatch {
  leftAt: number;
}

/**
 * What one store call changed that webhooks report, handed to exactly one caller: report `live`
 * (`stream.live`), then `joined`, then `left`, then `ended` (`stream.ended`).
 */
export interface StreamChange {
  /** The stream went live at this time. */
  live?: number;
  /** The live run that ended. */
  ended?: { startedAt: number; endedAt: number };
  joined: StreamWatch[];
  left: StreamWatchEnd[];
}

/** A stream now: its presenter's page, and when its live run started if it is live. */
export interface StreamState {
  presenter?: string;
  liveSince?: number;
}

/** A member whose page's node died, taken off its stream. */
export interface LapsedStreamMember {
  app: string;
  stream: string;
  member: StreamMember;
  change: StreamChange;
}

/**
 * Live streams, over every node. Contract:
 * - A stream has at most one presenter and at most `max` pages; a page is on it at most once.
 * - A live run goes from `goLive` to `stopLive`, the presenter's `leave`, or its lapse. While it is
 *   live every signed-in member has one open watch; a visitor never has one.
 * - Each change is handed to exactly one caller, so each webhook event is reported once, by one node.
 * - Watch ids are `<run>.<n>`: the caller names each run (`goLive`'s `run`), the store numbers its watches.
 * - The members of a node that died are taken by the node that claimed the dead one (NodeStore).
 */
export interface StreamStore {
  /**
   * Puts a page on a stream: `taken` when it would present and another page does, `full` when the
   * stream holds `max` pages, `already` when the page is on it (nothing changes then). Joining while
   * live opens the member's watch (in `change.joined`).
   */
  join(
    app: string,
    stream: string,
    member: StreamMember,
    max: number,
    nowMs: number,
  ): MaybePromise<{ state: StreamState; change: StreamChange } | 'taken' | 'full' | 'already'>;
  /** Takes a page off: its watch closes, and the live run ends when it presented. Undefined when it was not on. */
  leave(
    app: string,
    stream: string,
    page: string,
    nowMs: number,
  ): MaybePromise<{ member: StreamMember; change: StreamChange } | undefined>;
  /** The presenter's media connected: the run `run` starts, with a watch per signed-in member. Undefined unless `page` presents a stream not live. */
  goLive(app: string, stream: string, page: string, run: string, nowMs: number): MaybePromise<StreamChange | undefined>;
  /** The presenter's media stopped (it stays the presenter): the live run ends. Undefined unless `page` presents a live stream. */
  stopLive(app: string, stream: string, page: string, nowMs: number): MaybePromise<StreamChange | undefined>;
  state(app: string, stream: string): MaybePromise<StreamState>;
  /** The pages on the stream now, in the order they came. */
  members(app: string, stream: string): MaybePromise<StreamMember[]>;
  /**
   * Claims up to `limit` members whose page is on `node` (a dead node); each is taken off (as `leave`
   * does) and handed out once. Fewer than `limit`: the node has none left.
   */
  takeNode(node: string, nowMs: number, limit: number): MaybePromise<LapsedStreamMember[]>;
  close(): MaybePromise<void>;
}
