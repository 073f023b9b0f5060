import type { Logger } from 'pino';
import { NodeChannel } from '../core/node-channel.js';
import { StoreError } from '../engines/store-error.js';
import type { Broker, Outgoing } from '../engines/types.js';
import { cutData } from './console-data.js';
import type { ConsoleEntry, ConsoleFilter, Tapped } from './console-entry.js';
import { listenForConsole } from './console-listener.js';

export type { ConsoleEntry, ConsoleFilter, ConsoleKind, Tapped } from './console-entry.js';

/** Why the service ends a console: it stops, or the console's app was deleted. */
export type ConsoleEnd = 'stopping' | 'app_deleted';

/** An open console on this node: entries of its app that pass its filter, with their JSON text. */
export interface ConsoleSink {
  filter: ConsoleFilter;
  deliver(entry: ConsoleEntry, json: string): void;
  /** End the stream, for this reason. */
  end(reason: ConsoleEnd): void;
}

export interface ConsoleTapDeps {
  node: string;
  /** The engine's broker itself: console traffic is not the apps' (not counted in their metrics). */
  broker: Broker;
  /**
   * Where watches and entries from other nodes arrive: the node's channel. Left out (a tap on its
   * own), the tap opens one on `broker` and starts and closes it with itself.
   */
  channel?: NodeChannel;
  log: Logger;
  now: () => number;
  /** How often a node with open consoles says so (default 5 s). */
  announceMs?: number;
  /** How long a watch holds without being said again (default 15 s): a dead console costs this long at most. */
  ttlMs?: number;
}

/** Entries waiting to go to other nodes; more are dropped and counted (a `dropped` entry follows). */
const OUTBOX_MAX = 1000;

interface Watch {
  filters: ConsoleFilter[];
  until: number;
}

/** What a node announces: the filters of its open consoles by app, for `ttl` ms. */
interface Announcement {
  node: string;
  ttl: number;
  apps: Record<string, ConsoleFilter[]>;
}

function matches(filter: ConsoleFilter, entry: ConsoleEntry): boolean {
  return (
    (filter.room === undefined || filter.room === entry.room) &&
    (filter.user === undefined || filter.user === entry.user) &&
    (filter.event === undefined || filter.event === entry.event)
  );
}

function readFilter(value: unknown): ConsoleFilter | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const filter: ConsoleFilter = {};
  for (const name of ['room', 'user', 'event'] as const) {
    const field = (value as Record<string, unknown>)[name];
    if (typeof field === 'string') filter[name] = field;
    else if (field !== undefined) return undefined;
  }
  return filter;
}

function readAnnouncement(text: string): Announcement | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { node, ttl, apps } = value as Record<string, unknown>;
  if (typeof node !== 'string' || typeof ttl !== 'number' || !(ttl > 0)) return undefined;
  if (typeof apps !== 'object' || apps === null) return undefined;
  const read: Record<string, ConsoleFilter[]> = {};
  for (const [app, filters] of Object.entries(apps)) {
    if (!Array.isArray(filters)) return undefined;
    const list = filters.map(readFilter);
    if (list.some((f) => f === undefined)) return undefined;
    read[app] = list as ConsoleFilter[];
  }
  return { node, ttl, apps: read };
}

/**
 * The live console's tap. While a console on any node watches an app, it listens on the core's
 * diagnostics channels (`listenForConsole`) and builds an entry of each happening of a watched app
 * (`watching(app)`: a boolean, then one Map lookup); while none does, it does not listen, so the hot
 * paths build no message at all.
 *
 * Across nodes: a node with open consoles announces "these apps, with these filters, watched by me"
 * to every node (`console.watch`) every `announceMs`, and at once when its consoles change; every
 * node keeps what it heard for `ttlMs`. A tapped entry that passes a watcher's filters goes to that
 * node (`console.entry`), or straight to the consoles when the watcher is this node.
 */
export class ConsoleTap {
  readonly #deps: ConsoleTapDeps;
  readonly #announceMs: number;
  readonly #ttlMs: number;
  /** Which nodes watch each app, with their filters and until when. */
  readonly #watched = new Map<string, Map<string, Watch>>();
  #anyWatched = false;
  /** Stops listening on the diagnostics channels; set while any app is watched. */
  #unlisten: (() => void) | undefined;
  /** Apps each node announced, to forget those it no longer names. */
  readonly #byNode = new Map<string, Set<string>>();
  /** This node's open consoles by app. */
  readonly #local = new Map<string, Set<ConsoleSink>>();
  #localCount = 0;
  #outbox: Outgoing[] = [];
  /** Entries dropped for a full outbox, by node and app. */
  readonly #overflow = new Map<string, Map<string, number>>();
  #flushing = false;
  #flushScheduled = false;
  #announcing: Promise<void> = Promise.resolve();
  #announceTimer: NodeJS.Timeout | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  /** The tap's own channel, when it was given none. */
  readonly #ownChannel: NodeChannel | undefined;
  #closed = false;

  constructor(deps: ConsoleTapDeps) {
    this.#deps = deps;
    this.#announceMs = deps.announceMs ?? 5_000;
    this.#ttlMs = deps.ttlMs ?? 15_000;
    const channel = deps.channel ?? new NodeChannel({ node: deps.node, broker: deps.broker, log: deps.log });
    this.#ownChannel = deps.channel ? undefined : channel;
    channel.onBroadcast('console.app_gone', (message) => this.#endLocal(message.app, 'app_deleted'));
    channel.onBroadcast('console.watch', (message) => {
      // A shared channel outlives the tap: once closed, it taps nothing more for anyone.
      if (this.#closed) return;
      const heard = readAnnouncement(message.announcement);
      if (heard && heard.node !== deps.node) this.#heard(heard.node, heard.apps, heard.ttl);
    });
    channel.on('console.entry', (message, app) => this.#arrived(app, message.entry));
  }

  /** Starts sweeping the watches heard (and listening, on a channel of its own); in effect once it answers. */
  async start(): Promise<void> {
    await this.#ownChannel?.start();
    // Here, not when made: a server whose start fails leaves no timer behind.
    this.#sweepTimer = setInterval(() => this.#sweep(), Math.max(20, Math.min(1_000, this.#ttlMs / 4)));
    this.#sweepTimer.unref();
  }

  /** Whether a console anywhere watches the app: the hot paths' one question. */
  watching(app: string): boolean {
    return this.#anyWatched && this.#watched.has(app);
  }

  /** Consoles open on this node. */
  get consoles(): number {
    return this.#localCount;
  }

  /** Hands a happening to the consoles that watch its app (the listener calls it only when `watching(app)`). */
  record(app: string, tapped: Tapped): void {
    const watchers = this.#watched.get(app);
    if (!watchers) return;
    const entry: ConsoleEntry = { at: this.#deps.now(), ...tapped };
    if (tapped.data !== undefined) entry.data = cutData(tapped.data);
    let json: string | undefined;
    for (const [node, watch] of watchers) {
      if (!watch.filters.some((filter) => matches(filter, entry))) continue;
      json ??= JSON.stringify(entry);
      if (node === this.#deps.node) this.#deliver(app, entry, json);
      else this.#send(node, app, json);
    }
  }

  /**
   * Opens a console on this node. Answers once its watch was published to every node (rejects with a
   * StoreError, the
   * console closed again, when the broker could not take it); the answer closes it.
   */
  async open(app: string, sink: ConsoleSink): Promise<() => Promise<void>> {
    // The service is stopping: a console opened now would hold the drain up until its end.
    if (this.#closed) throw new StoreError('unavailable', { message: 'the service is stopping' });
    let sinks = this.#local.get(app);
    if (!sinks) {
      sinks = new Set();
      this.#local.set(app, sinks);
    }
    sinks.add(sink);
    this.#localCount++;
    let closed = false;
    const close = async (): Promise<void> => {
      // After the tap closed (the service stops) every console is gone already.
      if (closed || this.#closed) return;
      closed = true;
      const set = this.#local.get(app);
      if (set?.delete(sink)) this.#localCount--;
      if (set?.size === 0) this.#local.delete(app);
      try {
        await this.#announce();
      } catch (error) {
        // The other nodes stop sending once the watch runs out (ttlMs).
        this.#deps.log.warn({ err: error, app }, 'telling the nodes a live console closed failed');
      }
    };
    try {
      await this.#announce();
    } catch (error) {
      await close();
      throw error;
    }
    return close;
  }

  /**
   * Ends the app's consoles on every node (the app was deleted): here at once, elsewhere when they
   * hear it. Never rejects: a node that did not hear it streams nothing of an app that has no traffic,
   * and its console ends with its session.
   */
  async endApp(app: string): Promise<void> {
    this.#endLocal(app, 'app_deleted');
    try {
      await this.#deps.broker.publish(
        [{ kind: 'broadcast', message: { type: 'console.app_gone', app } }],
        this.#deps.now(),
      );
    } catch (error) {
      this.#deps.log.warn({ err: error, app }, 'telling the nodes to end the live consoles of a deleted app failed');
    }
  }

  #endLocal(app: string, reason: ConsoleEnd): void {
    const sinks = this.#local.get(app);
    if (!sinks || this.#closed) return;
    this.#local.delete(app);
    this.#localCount -= sinks.size;
    for (const sink of sinks) sink.end(reason);
    this.#announce().catch((error: unknown) =>
      this.#deps.log.warn({ err: error, app }, 'telling the nodes a live console closed failed'),
    );
  }

  /** Ends every console here (the service stops) and stops listening. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweepTimer);
    clearTimeout(this.#announceTimer);
    const sinks = [...this.#local.values()].flatMap((set) => [...set]);
    this.#local.clear();
    this.#localCount = 0;
    for (const sink of sinks) sink.end('stopping');
    // Tapped entries stop here: what other nodes watch goes on without this one.
    this.#watched.clear();
    this.#byNode.clear();
    this.#watchedChanged();
    try {
      await this.#publishWatch();
    } catch (error) {
      this.#deps.log.warn({ err: error }, 'telling the nodes the live consoles closed failed');
    }
    await this.#ownChannel?.close();
  }

  /** Says which apps this node watches now, to itself at once and to every node; renewed while any is open. */
  #announce(): Promise<void> {
    // One at a time, in order: the last one said is what the nodes keep.
    const next = this.#announcing.then(() => this.#publishWatch());
    this.#announcing = next.catch(() => {});
    clearTimeout(this.#announceTimer);
    this.#announceTimer = undefined;
    if (this.#localCount > 0 && !this.#closed) {
      this.#announceTimer = setTimeout(() => {
        this.#announce().catch((error: unknown) =>
          this.#deps.log.warn({ err: error }, 'renewing the live console watch failed; retrying'),
        );
      }, this.#announceMs);
      this.#announceTimer.unref();
    }
    return next;
  }

  async #publishWatch(): Promise<void> {
    const apps: Record<string, ConsoleFilter[]> = {};
    for (const [app, sinks] of this.#local) apps[app] = [...sinks].map((sink) => sink.filter);
    this.#heard(this.#deps.node, apps, this.#ttlMs);
    const announcement: Announcement = { node: this.#deps.node, ttl: this.#ttlMs, apps };
    const out: Outgoing = {
      kind: 'broadcast',
      message: { type: 'console.watch', announcement: JSON.stringify(announcement) },
    };
    await this.#deps.broker.publish([out], this.#deps.now());
  }

  /** A node's watches, as it said them: apps it no longer names are forgotten at once. */
  #heard(node: string, apps: Record<string, ConsoleFilter[]>, ttl: number): void {
    const until = this.#deps.now() + ttl;
    const before = this.#byNode.get(node);
    const now = new Set(Object.keys(apps));
    for (const app of before ?? []) if (!now.has(app)) this.#forget(app, node);
    if (now.size === 0) this.#byNode.delete(node);
    else this.#byNode.set(node, now);
    for (const [app, filters] of Object.entries(apps)) {
      let watchers = this.#watched.get(app);
      if (!watchers) {
        watchers = new Map();
        this.#watched.set(app, watchers);
      }
      watchers.set(node, { filters, until });
    }
    this.#watchedChanged();
  }

  /** One node's watch of one app ends (the caller then says what changed: `#watchedChanged`). */
  #forget(app: string, node: string): void {
    const watchers = this.#watched.get(app);
    watchers?.delete(node);
    if (watchers?.size === 0) this.#watched.delete(app);
  }

  /** Listens on the diagnostics channels from the first watch on any node to the last (none once closed). */
  #watchedChanged(): void {
    const any = this.#watched.size > 0 && !this.#closed;
    if (any === this.#anyWatched) return;
    this.#anyWatched = any;
    if (any) this.#unlisten = listenForConsole(this.#deps.node, this, this.#deps.log);
    else {
      this.#unlisten?.();
      this.#unlisten = undefined;
    }
  }

  /** Watches not said again within their time: their node stopped (or died). */
  #sweep(): void {
    if (!this.#anyWatched) return;
    const now = this.#deps.now();
    for (const [app, watchers] of this.#watched) {
      for (const [node, watch] of watchers) {
        if (watch.until >= now) continue;
        this.#forget(app, node);
        const apps = this.#byNode.get(node);
        apps?.delete(app);
        if (apps?.size === 0) this.#byNode.delete(node);
      }
    }
    this.#watchedChanged();
  }

  /** To the consoles of the app here whose filter the entry passes (a `dropped` entry to all). */
  #deliver(app: string, entry: ConsoleEntry, json: string): void {
    const sinks = this.#local.get(app);
    if (!sinks) return;
    for (const sink of sinks) {
      if (entry.kind !== 'dropped' && !matches(sink.filter, entry)) continue;
      try {
        sink.deliver(entry, json);
      } catch (error) {
        this.#deps.log.warn({ err: error, app }, 'a live console failed to take an entry');
      }
    }
  }

  /** An entry another node sent to this one's consoles. */
  #arrived(app: string, json: string): void {
    if (!this.#local.has(app)) return;
    let entry: ConsoleEntry;
    try {
      entry = JSON.parse(json) as ConsoleEntry;
    } catch {
      return;
    }
    if (typeof entry !== 'object' || entry === null || typeof entry.kind !== 'string') return;
    this.#deliver(app, entry, json);
  }

  /** Queues an entry for a node; sent with the others of this turn in one publish. */
  #send(node: string, app: string, json: string): void {
    if (this.#outbox.length >= OUTBOX_MAX) {
      let apps = this.#overflow.get(node);
      if (!apps) {
        apps = new Map();
        this.#overflow.set(node, apps);
      }
      apps.set(app, (apps.get(app) ?? 0) + 1);
      return;
    }
    this.#outbox.push({ kind: 'node', node, app, message: { type: 'console.entry', entry: json } });
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || this.#flushing) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      void this.#flush();
    });
  }

  /** One publish at a time: entries go in the order they were tapped; a failure loses them (logged). */
  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#outbox.length > 0 || this.#overflow.size > 0) {
        const batch = this.#outbox;
        this.#outbox = [];
        const at = this.#deps.now();
        for (const [node, apps] of this.#overflow) {
          for (const [app, count] of apps) {
            const entry = JSON.stringify({ at, kind: 'dropped', count });
            batch.push({ kind: 'node', node, app, message: { type: 'console.entry', entry } });
          }
        }
        this.#overflow.clear();
        try {
          await this.#deps.broker.publish(batch, at);
        } catch (error) {
          this.#deps.log.warn({ err: error, entries: batch.length }, 'sending live console entries failed');
        }
      }
    } finally {
      this.#flushing = false;
    }
  }
}
