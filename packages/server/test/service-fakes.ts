/**
 * Fakes for the unit tests of the feature services (groups, streams): PageSignals between the nodes
 * of one test, the node's forwarding units, the node registry's lapse handlers, and stores that fail
 * on demand. No sockets, no broker, no media: each keeps what it was asked, for the test to read.
 */
import type { AppEvent } from '@realtime/protocol';
import pino from 'pino';
import type { EventSink } from '../src/core/events.js';
import type { LapseHandler } from '../src/core/node-registry.js';
import type { PageSignals, ServiceMessageHandler } from '../src/core/page-signals.js';
import { StoreError } from '../src/engines/store-error.js';
import type { UnitEvents, UnitHost, UnitOwner } from '../src/units/unit-host.js';
import type { VideoWants } from '../src/units/video-wants.js';

export const silentLog = pino({ level: 'silent' });

/** A frame as a page got it (parsed back from JSON, as it would cross the wire). */
export type SentFrame = { t: string } & Record<string, unknown>;

export type NodeSignals = Pick<PageSignals, 'toPage' | 'toNode' | 'onNodeMessage'>;

/**
 * PageSignals among the nodes of one test: frames to pages are kept per page; a node message reaches
 * the handler that node's service registered, as JSON text (as over the broker). A page in
 * `failing` loses its frames: sending to it rejects with a StoreError, as a broker failure would.
 */
export class FakeSignals {
  readonly #frames = new Map<string, SentFrame[]>();
  readonly #handlers = new Map<string, ServiceMessageHandler>();
  /** Node messages in the order sent. */
  readonly messages: { node: string; kind: string; message: Record<string, unknown> }[] = [];
  readonly failing = new Set<string>();

  /** The signals of one node's services. */
  of(node: string): NodeSignals {
    return {
      toPage: async (_app, page, frame) => {
        if (this.failing.has(page)) throw new StoreError('unavailable');
        const frames = this.#frames.get(page) ?? [];
        frames.push(JSON.parse(JSON.stringify(frame)) as SentFrame);
        this.#frames.set(page, frames);
      },
      toNode: async (app, to, kind, message) => {
        this.messages.push({ node: to, kind, message: JSON.parse(JSON.stringify(message)) });
        this.#handlers.get(`${to}\u0000${kind}`)?.(app, JSON.stringify(message));
      },
      onNodeMessage: (kind, handler) => {
        this.#handlers.set(`${node}\u0000${kind}`, handler);
      },
    };
  }

  /** The frames a page got, of type `t` when given. */
  got(page: string, t?: string): SentFrame[] {
    return (this.#frames.get(page) ?? []).filter((frame) => t === undefined || frame.t === t);
  }

  /** The types of the frames a page got, in order. */
  types(page: string): string[] {
    return this.got(page).map((frame) => frame.t);
  }
}

/** What a fake unit host was asked: the operation, the unit's key and the page it was for. */
export interface UnitCall {
  op:
    | 'present'
    | 'presenterCandidate'
    | 'openViewer'
    | 'viewerAnswer'
    | 'viewerCandidate'
    | 'viewerVideo'
    | 'closeViewer'
    | 'end';
  key: string;
  page?: string;
  /** What a viewerVideo asked. */
  wants?: VideoWants;
}

export type FakeUnitHost = Pick<
  UnitHost,
  | 'hosts'
  | 'present'
  | 'presenterCandidate'
  | 'openViewer'
  | 'viewerAnswer'
  | 'viewerCandidate'
  | 'viewerVideo'
  | 'closeViewer'
  | 'end'
>;

/**
 * A node's forwarding units without media: `present` answers `answer:<offer>` and keeps the unit's
 * events (the test calls `connected()`/`failed()` as the media would); `openViewer` answers
 * `offer:<page>` unless `refuse` throws for the page.
 */
export class FakeUnits implements FakeUnitHost {
  readonly calls: UnitCall[] = [];
  readonly #units = new Map<string, { sender: string; events: UnitEvents }>();
  /** An error to throw from openViewer for a page, or undefined to open it. */
  refuse: (page: string) => Error | undefined = () => undefined;

  /** The calls of one kind, as `key page`. */
  of(op: UnitCall['op']): UnitCall[] {
    return this.calls.filter((call) => call.op === op);
  }

  /** The events of the unit `sender` presents to (fails the test when there is none). */
  events(sender: string): UnitEvents {
    for (const unit of this.#units.values()) if (unit.sender === sender) return unit.events;
    throw new Error(`no unit of ${sender}`);
  }

  hosts(key: string, sender: string): boolean {
    return this.#units.get(key)?.sender === sender;
  }

  async present(key: string, owner: UnitOwner, offerSdp: string, events: UnitEvents): Promise<string | undefined> {
    this.calls.push({ op: 'present', key, page: owner.page });
    this.#units.set(key, { sender: owner.page, events });
    return `answer:${offerSdp}`;
  }

  async presenterCandidate(key: string, sender: string): Promise<void> {
    this.calls.push({ op: 'presenterCandidate', key, page: sender });
  }

  async openViewer(key: string, page: string): Promise<string | undefined> {
    this.calls.push({ op: 'openViewer', key, page });
    const refusal = this.refuse(page);
    if (refusal) throw refusal;
    return `offer:${page}`;
  }

  async viewerAnswer(key: string, page: string): Promise<void> {
    this.calls.push({ op: 'viewerAnswer', key, page });
  }

  async viewerCandidate(key: string, page: string): Promise<void> {
    this.calls.push({ op: 'viewerCandidate', key, page });
  }

  viewerVideo(key: string, page: string, wants: VideoWants): void {
    this.calls.push({ op: 'viewerVideo', key, page, wants });
  }

  async closeViewer(key: string, page: string): Promise<void> {
    this.calls.push({ op: 'closeViewer', key, page });
  }

  async end(key: string): Promise<void> {
    this.calls.push({ op: 'end', key });
    this.#units.delete(key);
  }
}

/** The node registry as the services see it: the lapse handlers they register, run on demand. */
export class FakeLapses {
  readonly handlers: { what: string; handler: LapseHandler }[] = [];

  onLapse(what: string, handler: LapseHandler): void {
    this.handlers.push({ what, handler });
  }

  /** Runs each handler once for `node`, as the registry's sweep does; what each answered. */
  async once(node: string): Promise<('done' | 'more')[]> {
    const answers: ('done' | 'more')[] = [];
    for (const { handler } of this.handlers) answers.push(await handler({ node, lapse: 1 }));
    return answers;
  }
}

/**
 * A store whose methods reject with a StoreError on demand (as an engine that lost its backend):
 * `fail(name)` for every later call, `fail(name, 1)` for the next one only; `heal(name)` ends it.
 * Every other call goes to the store itself.
 */
export function failable<S extends object>(
  store: S,
): { store: S; fail(name: keyof S, times?: number): void; heal(name: keyof S): void } {
  const failing = new Map<keyof S, number>();
  const proxy = new Proxy(store, {
    get(target, name) {
      // The store itself as `this`: its private fields are not the proxy's.
      const value = Reflect.get(target, name);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const left = failing.get(name as keyof S) ?? 0;
        if (left <= 0) return (value as (...a: unknown[]) => unknown).apply(target, args);
        failing.set(name as keyof S, left - 1);
        return Promise.reject(new StoreError('unavailable'));
      };
    },
  });
  return {
    store: proxy,
    fail: (name, times = Number.POSITIVE_INFINITY) => failing.set(name, times),
    heal: (name) => failing.delete(name),
  };
}

/** An event sink that keeps what it records, and fails (a StoreError) for the types in `fail`. */
export function recordingEvents(): {
  recorded: { app: string; event: AppEvent }[];
  fail: Set<string>;
  of<T extends AppEvent['type']>(type: T): Extract<AppEvent, { type: T }>[];
  sink: EventSink;
} {
  const recorded: { app: string; event: AppEvent }[] = [];
  const fail = new Set<string>();
  return {
    recorded,
    fail,
    /** The recorded events of one type, without their app. */
    of: <T extends AppEvent['type']>(type: T) =>
      recorded.map((r) => r.event).filter((event): event is Extract<AppEvent, { type: T }> => event.type === type),
    sink: {
      record: (app: string, event: AppEvent) => {
        if (fail.has(event.type)) return Promise.reject(new StoreError('unavailable'));
        recorded.push({ app, event });
        return undefined;
      },
      reportOf: () => undefined,
      reported: () => {},
    },
  };
}
