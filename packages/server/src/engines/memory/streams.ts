import { nodeOfPage } from '../node-id.js';
import type {
  LapsedStreamMember,
  StreamChange,
  StreamMember,
  StreamState,
  StreamStore,
  StreamWatch,
  StreamWatchEnd,
} from '../types.js';

interface Stream {
  /** Members by page, in the order they came, each with its open watch while live. */
  members: Map<string, { member: StreamMember; watch?: StreamWatch }>;
  presenter?: string;
  /** The live run: its id, start, and the last watch number it gave. */
  run?: { id: string; startedAt: number; n: number };
}

/** Live streams in this process's memory: the embedded engine's, where one process is every node. Answers at once. */
export class MemoryStreamStore implements StreamStore {
  /** Streams by `app\0stream`; a stream goes with its last member. */
  readonly #streams = new Map<string, Stream>();

  join(
    app: string,
    stream: string,
    member: StreamMember,
    max: number,
    nowMs: number,
  ): { state: StreamState; change: StreamChange } | 'taken' | 'full' | 'already' {
    const key = `${app}\u0000${stream}`;
    let s = this.#streams.get(key);
    if (s?.members.has(member.page)) return 'already';
    if (member.role === 'presenter' && s?.presenter !== undefined) return 'taken';
    if ((s?.members.size ?? 0) >= max) return 'full';
    if (!s) {
      s = { members: new Map() };
      this.#streams.set(key, s);
    }
    const entry: { member: StreamMember; watch?: StreamWatch } = { member: copyMember(member) };
    s.members.set(member.page, entry);
    if (member.role === 'presenter') s.presenter = member.page;
    const change: StreamChange = { joined: [], left: [] };
    const watch = s.run && openWatch(s.run, entry.member, nowMs);
    if (watch) {
      entry.watch = watch;
      change.joined.push({ ...watch });
    }
    return { state: stateOf(s), change };
  }

  leave(
    app: string,
    stream: string,
    page: string,
    nowMs: number,
  ): { member: StreamMember; change: StreamChange } | undefined {
    const key = `${app}\u0000${stream}`;
    const s = this.#streams.get(key);
    const entry = s?.members.get(page);
    if (!s || !entry) return undefined;
    const change: StreamChange = { joined: [], left: [] };
    if (s.presenter === page) {
      // The presenter's leave ends the run: every watch closes, its own among them, in join order.
      if (s.run) endRun(s, s.run, nowMs, change);
      s.presenter = undefined;
    } else if (entry.watch) {
      change.left.push({ ...entry.watch, leftAt: nowMs });
    }
    s.members.delete(page);
    if (s.members.size === 0) this.#streams.delete(key);
    return { member: copyMember(entry.member), change };
  }

  goLive(app: string, stream: string, page: string, run: string, nowMs: number): StreamChange | undefined {
    const s = this.#streams.get(`${app}\u0000${stream}`);
    if (!s || s.presenter !== page || s.run) return undefined;
    const live = { id: run, startedAt: nowMs, n: 0 };
    s.run = live;
    const change: StreamChange = { live: nowMs, joined: [], left: [] };
    for (const entry of s.members.values()) {
      const watch = openWatch(live, entry.member, nowMs);
      if (!watch) continue;
      entry.watch = watch;
      change.joined.push({ ...watch });
    }
    return change;
  }

  stopLive(app: string, stream: string, page: string, nowMs: number): StreamChange | undefined {
    const s = this.#streams.get(`${app}\u0000${stream}`);
    if (!s || s.presenter !== page || !s.run) return undefined;
    const change: StreamChange = { joined: [], left: [] };
    endRun(s, s.run, nowMs, change);
    return change;
  }

  state(app: string, stream: string): StreamState {
    const s = this.#streams.get(`${app}\u0000${stream}`);
    return s ? stateOf(s) : {};
  }

  members(app: string, stream: string): StreamMember[] {
    return [...(this.#streams.get(`${app}\u0000${stream}`)?.members.values() ?? [])].map((e) => copyMember(e.member));
  }

  takeNode(node: string, nowMs: number, limit: number): LapsedStreamMember[] {
    const taken: LapsedStreamMember[] = [];
    for (const [key, s] of this.#streams) {
      const cut = key.indexOf('\u0000');
      for (const entry of s.members.values()) {
        if (taken.length >= limit) return taken;
        if (nodeOfPage(entry.member.page) !== node) continue;
        const app = key.slice(0, cut);
        const stream = key.slice(cut + 1);
        const left = this.leave(app, stream, entry.member.page, nowMs);
        if (left) taken.push({ app, stream, ...left });
      }
    }
    return taken;
  }

  close(): void {}
}

/** The member's watch in the run, numbered next; none for a visitor. */
function openWatch(run: { id: string; n: number }, member: StreamMember, nowMs: number): StreamWatch | undefined {
  if (member.user === undefined) return undefined;
  run.n += 1;
  return { watch: `${run.id}.${run.n}`, user: member.user, role: member.role, joinedAt: nowMs };
}

/** Ends the live run: closes every open watch, in join order, and reports the run. */
function endRun(s: Stream, run: { startedAt: number }, nowMs: number, change: StreamChange): void {
  for (const entry of s.members.values()) {
    if (!entry.watch) continue;
    const closed: StreamWatchEnd = { ...entry.watch, leftAt: nowMs };
    change.left.push(closed);
    entry.watch = undefined;
  }
  change.ended = { startedAt: run.startedAt, endedAt: nowMs };
  s.run = undefined;
}

function stateOf(s: Stream): StreamState {
  const state: StreamState = {};
  if (s.presenter !== undefined) state.presenter = s.presenter;
  if (s.run) state.liveSince = s.run.startedAt;
  return state;
}

function copyMember(member: StreamMember): StreamMember {
  const out: StreamMember = { page: member.page, role: member.role };
  if (member.user !== undefined) out.user = member.user;
  return out;
}
