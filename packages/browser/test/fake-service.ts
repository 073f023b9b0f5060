/**
 * A scripted stand-in for the realtime service: a `ws` WebSocketServer on 127.0.0.1, port 0, that
 * speaks the page protocol of docs/protocol.md only as far as each test tells it to.
 */
import type { AddressInfo } from 'node:net';
import type { ClientFrame, HelloFrame, ServerFrame } from '@realtime/protocol';
import { afterEach, beforeEach } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import {
  type Clock,
  type ConnectionState,
  type ConnectOptions,
  connect,
  type RealtimeClient,
  type Timers,
  type WebSocketConstructor,
} from '../src/index.js';

/** The `ws` WebSocket, as the SDK's injectable constructor. */
export const NodeWebSocket: WebSocketConstructor = WebSocket;

const WAIT_MS = 5000;

/** A queue whose `next()` waits for the next pushed item, failing with a clear message after a while. */
class Inbox<T> {
  readonly #items: T[] = [];
  readonly #waiters: ((item: T) => void)[] = [];

  push(item: T): void {
    const waiter = this.#waiters.shift();
    if (waiter) waiter(item);
    else this.#items.push(item);
  }

  next(what: string): Promise<T> {
    const item = this.#items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`the fake service waited in vain for ${what}`));
      }, WAIT_MS);
      const waiter = (value: T) => {
        clearTimeout(timer);
        resolve(value);
      };
      this.#waiters.push(waiter);
    });
  }

  get pending(): readonly T[] {
    return this.#items;
  }
}

type FrameOf<T extends ClientFrame['t']> = Extract<ClientFrame, { t: T }>;

/** One page's socket, as the service sees it. */
export class FakePage {
  readonly url: URL;
  /** Every frame the page sent, in order. */
  readonly received: ClientFrame[] = [];
  /** Settles when the socket closes, with the close code the service saw. */
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #socket: WebSocket;
  readonly #inbox = new Inbox<ClientFrame>();

  constructor(socket: WebSocket, url: string) {
    this.#socket = socket;
    this.url = new URL(url, 'http://127.0.0.1');
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as ClientFrame;
      this.received.push(frame);
      this.#inbox.push(frame);
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
    });
  }

  /** The next frame the page sends; fails when it is not of type `t`. */
  async next<T extends ClientFrame['t']>(t: T): Promise<FrameOf<T>> {
    const frame = await this.#inbox.next(`a ${t} frame`);
    if (frame.t !== t) throw new Error(`expected a ${t} frame, got ${JSON.stringify(frame)}`);
    return frame as FrameOf<T>;
  }

  /** Frames sent by the page and not yet taken by `next`. */
  get unread(): readonly ClientFrame[] {
    return this.#inbox.pending;
  }

  /** Takes the hello and answers welcome; returns the hello. */
  async welcome(options: { user?: string | null; heartbeat?: number } = {}): Promise<HelloFrame> {
    const hello = await this.next('hello');
    this.send({ t: 'welcome', v: 1, user: options.user ?? null, heartbeat: options.heartbeat ?? 25_000 });
    return hello;
  }

  /** Sends a frame (or any JSON value, to test what the SDK does with odd ones). */
  send(frame: ServerFrame | Record<string, unknown>): void {
    this.#socket.send(JSON.stringify(frame));
  }

  sendText(text: string): void {
    this.#socket.send(text);
  }

  close(code: number, reason = ''): void {
    this.#socket.close(code, reason);
  }

  /** Drops the TCP connection without a close frame (the page sees 1006). */
  terminate(): void {
    this.#socket.terminate();
  }
}

export class FakeService {
  /** The service's base address, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every page socket accepted so far. */
  readonly pages: FakePage[] = [];
  readonly #server: WebSocketServer;
  readonly #arrivals = new Inbox<FakePage>();

  private constructor(server: WebSocketServer) {
    this.#server = server;
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    server.on('connection', (socket, request) => {
      const page = new FakePage(socket, request.url ?? '/');
      this.pages.push(page);
      this.#arrivals.push(page);
    });
  }

  static async start(): Promise<FakeService> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    return new FakeService(server);
  }

  /** The next page socket to connect. */
  accept(): Promise<FakePage> {
    return this.#arrivals.next('a page to connect');
  }

  /** Accepts the next page and welcomes it. */
  async acceptWelcomed(options: { user?: string | null; heartbeat?: number } = {}): Promise<FakePage> {
    const page = await this.accept();
    await page.welcome(options);
    return page;
  }

  async stop(): Promise<void> {
    for (const client of this.#server.clients) client.terminate();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** Resolves when the client is in `state` (at once if it is already). */
export function stateOf(client: RealtimeClient, state: ConnectionState): Promise<void> {
  if (client.state === state) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`the client never became ${state} (it is ${client.state})`));
    }, WAIT_MS);
    const off = client.on('$state', (change) => {
      if (change.state !== state) return;
      clearTimeout(timer);
      off();
      resolve();
    });
  });
}

/** Resolves with the first value `listen` reports. */
export function once<T>(listen: (resolve: (value: T) => void) => () => void, what = 'an event'): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`waited in vain for ${what}`));
    }, WAIT_MS);
    const off = listen((value) => {
      clearTimeout(timer);
      off();
      resolve(value);
    });
  });
}

/** Real timers that remember which are still pending, so a test can check a closed client holds none. */
export class TrackedTimers implements Timers {
  readonly pending = new Set<unknown>();
  /** Every delay asked for, in order. */
  readonly delays: number[] = [];

  setTimeout(callback: () => void, ms: number): unknown {
    this.delays.push(ms);
    const handle = setTimeout(() => {
      this.pending.delete(handle);
      callback();
    }, ms);
    this.pending.add(handle);
    return handle;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle);
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  }
}

/** A clock a test moves by hand: timers fire only when `advance` passes their time. */
export class ManualClock implements Clock {
  #now = 0;
  #nextId = 1;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#nextId++;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Moves time forward, firing due timers in time order (including those they set). */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let due: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers) if (entry[1].at <= end && (!due || entry[1].at < due[1].at)) due = entry;
      if (!due) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = end;
  }

  get pendingTimers(): number {
    return this.#timers.size;
  }
}

/**
 * Starts a fake service before each test and stops it (and closes the test's clients) after.
 * `open` connects a client to it with `ws` and no jitter (`random` 0: every reconnect is at once).
 */
export function useFakeService(): {
  service: () => FakeService;
  open: (options?: Partial<ConnectOptions>) => RealtimeClient;
} {
  let current: FakeService | undefined;
  const clients: RealtimeClient[] = [];
  beforeEach(async () => {
    current = await FakeService.start();
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await current?.stop();
    current = undefined;
  });
  const service = () => {
    if (!current) throw new Error('no fake service outside a test');
    return current;
  };
  return {
    service,
    open: (options = {}) => {
      const client = connect({
        url: service().url,
        site: 'app1',
        WebSocket: NodeWebSocket,
        random: () => 0,
        ...options,
      });
      clients.push(client);
      return client;
    },
  };
}
