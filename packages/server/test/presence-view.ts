/**
 * What a page knows of a presence room from the frames it got, read the way the browser SDK reads
 * them: `joined` (the whole list, or a first page with `count`), `$member.*` events (small rooms)
 * and `members` frames (large rooms). For tests over raw pages.
 */
import type { RawPage } from './pages.js';

type Frame = Record<string, unknown>;

export interface PresenceView {
  /** Users the page knows of. */
  users: Set<string>;
  /** The room's count as the page last heard it (the list's size while it had no count). */
  count: number;
  /** True when the page was given a partial list (`joined` with a count). */
  partial: boolean;
  /** `members` frames and `$member.*` events the page got. */
  membersFrames: number;
  memberEvents: number;
}

const userOf = (value: unknown) => (value as { user?: unknown } | undefined)?.user;

/** Reads a page's frames of one room since (and including) its last `joined` there. */
export function presenceView(page: RawPage, room: string): PresenceView {
  const frames = page.frames;
  let start = -1;
  for (let i = frames.length - 1; i >= 0; i--) {
    const f = frames[i] as Frame;
    if (f.t === 'joined' && f.room === room) {
      start = i;
      break;
    }
  }
  const view: PresenceView = { users: new Set(), count: 0, partial: false, membersFrames: 0, memberEvents: 0 };
  if (start < 0) return view;
  let count: number | undefined;
  for (const f of frames.slice(start)) {
    if (f.room !== room) continue;
    if (f.t === 'joined') {
      for (const m of (f.members as unknown[]) ?? []) view.users.add(String(userOf(m)));
      if (typeof f.count === 'number') {
        count = f.count;
        view.partial = true;
      }
    } else if (f.t === 'members') {
      view.membersFrames++;
      for (const user of f.left as string[]) view.users.delete(user);
      for (const m of f.joined as unknown[]) view.users.add(String(userOf(m)));
      if (typeof f.count === 'number') count = f.count;
    } else if (f.t === 'event' && (f.event === '$member.joined' || f.event === '$member.left')) {
      view.memberEvents++;
      if (f.event === '$member.joined') view.users.add(String(userOf(f.data)));
      else view.users.delete(String(userOf(f.data)));
    }
  }
  view.count = count ?? view.users.size;
  return view;
}

/** Walks a room's member pages with `list` frames from the first; answers every user in order. */
export async function walkMembers(page: RawPage, room: string, firstRef: number): Promise<string[]> {
  const users: string[] = [];
  let ref = firstRef;
  let cursor: string | undefined;
  for (;;) {
    const r = ref++;
    page.send(cursor === undefined ? { t: 'list', ref: r, room } : { t: 'list', ref: r, room, cursor });
    const listed = await page.next((f) => f.ref === r && (f.t === 'listed' || f.t === 'error'), `listed ${r}`);
    if (listed.t !== 'listed') throw new Error(`list refused: ${JSON.stringify(listed)}`);
    for (const m of listed.members as unknown[]) users.push(String(userOf(m)));
    if (typeof listed.cursor !== 'string') return users;
    cursor = listed.cursor;
  }
}
