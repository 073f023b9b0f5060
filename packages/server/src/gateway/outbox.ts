import type { Socket } from 'node:net';
import { type Frame, frameLength } from './ws-frame.js';

/**
 * A page's outgoing frames. Frames written in the same tick go out together: the socket is corked at
 * the first and uncorked on the next tick, so Node writes them with one writev. The queue is bounded:
 * past `limitBytes` not yet handed to the kernel, the page is a slow consumer and `onOverflow` runs.
 */
export class Outbox {
  readonly #socket: Socket;
  readonly #limitBytes: number;
  readonly #onOverflow: () => void;
  #corked = false;
  #closed = false;

  constructor(socket: Socket, limitBytes: number, onOverflow: () => void) {
    this.#socket = socket;
    this.#limitBytes = limitBytes;
    this.#onOverflow = onOverflow;
  }

  /** Queues one framed message; false when the page is closed or was found too slow. */
  write(frame: Frame): boolean {
    if (this.#closed) return false;
    // A frame larger than the whole bound still goes to a page that has nothing waiting.
    const waiting = this.#socket.writableLength;
    if (waiting > 0 && waiting + frameLength(frame) > this.#limitBytes) {
      this.#closed = true;
      this.#onOverflow();
      return false;
    }
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      if (corked.length === 0) process.nextTick(uncorkAll);
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

  /** Resolves when the socket has written what waits (or has closed). */
  drained(): Promise<void> {
    if (this.#closed || this.#socket.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.#socket.off('drain', done);
        this.#socket.off('close', done);
        resolve();
      };
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

/** Outboxes corked this tick: one nextTick uncorks them all, not one callback per page per event. */
const corked: Outbox[] = [];

function uncorkAll(): void {
  for (let i = 0; i < corked.length; i++) (corked[i] as Outbox).uncork();
  corked.length = 0;
}
