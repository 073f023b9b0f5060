import type { RealtimeClient, RealtimeSocketError, Room, RoomStatus, TokenSource } from '@realtime/browser';

/**
 * A room's join state as the hooks show it: where the room is, and the error that refused its last
 * join (cleared when it joins again).
 */
export interface RoomState {
  status: RoomStatus;
  error: RealtimeSocketError | undefined;
}

/** What a component asks of a room it holds. */
export interface HoldOptions {
  token: TokenSource;
  /** On the first join only (see JoinOptions of `@realtime/browser`). */
  history?: number | undefined;
}

/** One component's hold on a joined room, from {@link holdRoom}. */
export interface RoomLease {
  readonly room: Room;
  /** The room's join state now; the same object until it changes. */
  state(): RoomState;
  /** Calls `onChange` when {@link RoomLease.state} may have changed; returns a function that stops it. */
  subscribe(onChange: () => void): () => void;
  /** Lets go of the room: the last hold to go leaves it (once nothing holds it again within the turn). */
  release(): void;
}

interface Holder {
  readonly token: TokenSource;
}

/** A room the hooks joined (or found joined), with the holds on it and its watched state. */
interface Entry {
  readonly room: Room;
  /** False when the app's own code joined the room: the hooks then never leave it. */
  readonly owned: boolean;
  readonly holders: Set<Holder>;
  /** The token the room joins with: the newest holder's, kept when it lets go (a re-join may still come). */
  readonly latest: { token: TokenSource };
  readonly state: RoomState;
  readonly listeners: Set<() => void>;
  /** Removes the entry's listeners from the room and the client. */
  readonly unwatch: () => void;
}

const entriesOf = new WeakMap<RealtimeClient, Map<string, Entry>>();

/**
 * Holds the room `name` of `client` for one component: joins it when nothing holds it yet, and
 * counts holds, so two components showing one room share one join, and the room is left once the
 * last of them lets go. The leave waits a microtask: a component that lets go and takes the room back
 * within one commit (React's StrictMode, a remount under a new key) keeps it joined, with no leave and
 * join sent. A room the app joined with `client.join` itself is used, never left.
 *
 * Throws the TypeError of `client.join` for a room name or options the service would refuse.
 */
export function holdRoom(client: RealtimeClient, name: string, options: HoldOptions): RoomLease {
  let entries = entriesOf.get(client);
  if (!entries) {
    entries = new Map();
    entriesOf.set(client, entries);
  }
  let entry = entries.get(name);
  // Left (the client closed, or the app's code left it): a hold from now on joins again.
  if (!entry || entry.room.status === 'left') {
    entry = open(client, name, options);
    entries.set(name, entry);
  }
  const holder: Holder = { token: options.token };
  entry.holders.add(holder);
  entry.latest.token = options.token;
  return lease(entries, name, entry, holder);
}

function open(client: RealtimeClient, name: string, options: HoldOptions): Entry {
  const existing = client.room(name);
  const latest = { token: options.token };
  const room =
    existing ??
    client.join(name, {
      token: () => (typeof latest.token === 'function' ? latest.token() : latest.token),
      ...(options.history === undefined ? {} : { history: options.history }),
    });
  const listeners = new Set<() => void>();
  let state: RoomState = { status: room.status, error: undefined };
  const update = (error?: RealtimeSocketError): void => {
    const status = room.status;
    // An error the room went on after (a history refusal it joined without) is not kept.
    const kept = status === 'failed' || status === 'left' ? (error ?? state.error) : undefined;
    if (status === state.status && kept === state.error) return;
    state = { status, error: kept };
    for (const listener of [...listeners]) listener();
  };
  const offs = [
    room.on('$joined', () => update()),
    room.on('$error', (error) => update(error)),
    // A lost socket suspends the room (`joining`) and a final close leaves it, before `$state` is told.
    client.on('$state', () => update()),
  ];
  return {
    room,
    owned: existing === undefined,
    holders: new Set(),
    latest,
    get state() {
      return state;
    },
    listeners,
    unwatch: () => {
      for (const off of offs) off();
    },
  };
}

function lease(entries: Map<string, Entry>, name: string, entry: Entry, holder: Holder): RoomLease {
  let released = false;
  return {
    room: entry.room,
    state: () => entry.state,
    subscribe(onChange) {
      // A listener of its own per call, so two subscriptions with one function are two.
      const listener = () => onChange();
      entry.listeners.add(listener);
      return () => {
        entry.listeners.delete(listener);
      };
    },
    release() {
      if (released) return;
      released = true;
      entry.holders.delete(holder);
      const newest = [...entry.holders].at(-1);
      if (newest) entry.latest.token = newest.token;
      if (entry.holders.size > 0) return;
      queueMicrotask(() => {
        if (entry.holders.size > 0) return;
        if (entries.get(name) === entry) entries.delete(name);
        entry.unwatch();
        if (entry.owned) void entry.room.leave();
      });
    },
  };
}
