import type { Socket } from 'node:net';
import { type Frame, frameLength } from '../core/ws-frame.js';

/** Counts of what pages were sent, shared by a gateway's outboxes and read by metrics. */
export interface Traffic {
  deliveries: number;
  bytesOut: number;
  slowConsumerCloses: number;
  /** Page frames refused (or the page closed) for going over its frame budget. */
  framesRateLimited: number;
}

/**
 * A page's outgoing frames. Frames written in the same turn of the event loop go out together: the
 * socket is corked at the first and uncorked once the turn's I/O callbacks have run (setImmediate), so
 * the events of every emit that arrived in that turn reach a page in one writev, one syscall. The queue is bounded:
 * past `limitBytes` not yet handed to the kernel, the page is a slow consumer and `onOverflow` runs.
 */
export class Outbox {
  readonly #socket: Socket;
  readonly #limitBytes: number;
  readonly #onOverflow: () => void;
  readonly #traffic: Traffic;
  #corked = false;
  #closed = false;

  constructor(socket: Socket, limitBytes: number, onOverflow: () => void, traffic: Traffic) {
    this.#socket = socket;
    this.#limitBytes = limitBytes;
    this.#onOverflow = onOverflow;
    this.#traffic = traffic;
  }

  /** Queues one framed message; false when the page is closed or was found too slow. */
  write(frame: Frame): boolean {
    if (this.#closed) return false;
    // A frame larger than the whole bound still goes to a page that has nothing waiting.
    const waiting = this.#socket.writableLength;
    const length = frameLength(frame);
    if (waiting > 0 && waiting + length > this.#limitBytes) {
      this.#closed = true;
      this.#onOverflow();
      return false;
    }
    this.#traffic.deliveries++;
    this.#traffic.bytesOut += length;
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      if (corked.length === 0) setImmediate(uncorkAll);
      corked.push(this);
    }
    if (Buffer.isBuffer(frame)) this.#socket.write(frame);
    else for (const part of frame as readonly Buffer[]) this.#socket.write(part);
    return true;
  }

  /** True when frames waiting are past half the bound: a long replay should wait for `drained()`. */
  get full(): boolean {
    return this.#socket.writableLength > this.#limitBytes / 2;
  }

  /** Resolves when the socket has written what waits (or has closed), or after `ms` at the latest. */
  drained(ms = Number.POSITIVE_INFINITY): Promise<void> {
    if (this.#closed || this.#socket.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#socket.off('drain', done);
        this.#socket.off('close', done);
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      this.#socket.once('drain', done);
      this.#socket.once('close', done);
    });
  }

  /** Stops writing (the socket is closing); frames queued so far still go out. */
  close(): void {
    this.#closed = true;
  }

  uncork(): void {
    this.#corked = false;
    this.#socket.uncork();
  }
}

/**
 * Outboxes corked this turn: one setImmediate uncorks them all, not one callback per page per event.
 * Not nextTick: that would uncork after each emit's callback and cost a syscall per event per page.
 */
const corked: Outbox[] = [];

function uncorkAll(): void {
  for (let i = 0; i < corked.length; i++) (corked[i] as Outbox).uncork();
  corked.length = 0;
}
