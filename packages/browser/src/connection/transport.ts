import type { ServerFrame } from '@realtime/protocol';

/** The event objects the transport reads: those of the DOM WebSocket and of `ws`. */
export interface SocketMessageEvent {
  readonly data: unknown;
}
export interface SocketCloseEvent {
  readonly code: number;
  readonly reason: string;
}

/**
 * The part of a WebSocket the SDK uses. The browser's `WebSocket` and the `ws` package's
 * `WebSocket` both fit, so Node (which has no global WebSocket before 22) can inject one.
 */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open' | 'error', listener: () => void): void;
  addEventListener(type: 'message', listener: (event: SocketMessageEvent) => void): void;
  addEventListener(type: 'close', listener: (event: SocketCloseEvent) => void): void;
}

/**
 * A WebSocket constructor: `globalThis.WebSocket` in browsers, `WebSocket` of `ws` in Node.
 *
 * @example
 * import { WebSocket } from 'ws';
 * const ctor: WebSocketConstructor = WebSocket;
 */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

const OPEN = 1;

export interface TransportHandlers {
  open(): void;
  frame(frame: ServerFrame): void;
  /** The socket is gone. Called at most once, and never after {@link Transport.close}. */
  close(code: number, reason: string): void;
}

/** Parses one text message into a frame: a JSON object with a string `t`; undefined for anything else. */
export function parseFrame(data: unknown): ServerFrame | undefined {
  if (typeof data !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return typeof (value as { t?: unknown }).t === 'string' ? (value as ServerFrame) : undefined;
}

/** One WebSocket: JSON text frames in and out, and exactly one end. */
export class Transport {
  readonly #socket: WebSocketLike | undefined;
  #handlers: TransportHandlers | undefined;

  constructor(WebSocket: WebSocketConstructor, url: string, handlers: TransportHandlers) {
    this.#handlers = handlers;
    let socket: WebSocketLike;
    try {
      socket = new WebSocket(url);
    } catch (error) {
      // A refused URL (CSP, bad port) throws in the constructor: report it as a lost socket, later,
      // so the caller sees the same order of events as for any other failure.
      const reason = error instanceof Error ? error.message : 'the WebSocket could not be created';
      queueMicrotask(() => this.#end(1006, reason));
      this.#socket = undefined;
      return;
    }
    this.#socket = socket;
    socket.addEventListener('open', () => this.#handlers?.open());
    socket.addEventListener('message', (event) => {
      if (!this.#handlers) return;
      const frame = parseFrame(event.data);
      if (frame) this.#handlers.frame(frame);
    });
    socket.addEventListener('close', (event) => this.#end(event.code, event.reason));
    // Kept for the socket's whole life: `ws` throws on an error event nobody listens to.
    // The close event that follows an error is what ends the transport.
    socket.addEventListener('error', () => {});
  }

  /** Writes one frame as JSON text; false when the socket is not open. */
  send(text: string): boolean {
    if (!this.#socket || this.#socket.readyState !== OPEN) return false;
    this.#socket.send(text);
    return true;
  }

  /** Closes the socket and detaches: no handler runs after this. */
  close(code = 1000, reason = ''): void {
    this.#handlers = undefined;
    try {
      // WebSocket close reasons are limited to 123 bytes (40 characters are at most 120).
      this.#socket?.close(code, reason.slice(0, 40));
    } catch {
      // Already closed or closing.
    }
  }

  #end(code: number, reason: string): void {
    const handlers = this.#handlers;
    this.#handlers = undefined;
    handlers?.close(code, reason);
  }
}
