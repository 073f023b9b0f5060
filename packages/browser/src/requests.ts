import type {
  JoinedFrame,
  JoinFrame,
  LeaveFrame,
  LeftFrame,
  ListedFrame,
  ListFrame,
  SendFrame,
  SentFrame,
} from '@realtime/protocol';
import type { RealtimeSocketError } from './errors.js';

/** A frame the service answers by `ref`, before the SDK gives it its `ref`. */
export type RequestFrame =
  | Omit<JoinFrame, 'ref'>
  | Omit<LeaveFrame, 'ref'>
  | Omit<SendFrame, 'ref'>
  | Omit<ListFrame, 'ref'>;

/** The answer frame of each request: `join` → `joined`, `leave` → `left`, `send` → `sent`, `list` → `listed`. */
export type AnswerTo<F extends RequestFrame> = F extends { t: 'join' }
  ? JoinedFrame
  : F extends { t: 'leave' }
    ? LeftFrame
    : F extends { t: 'list' }
      ? ListedFrame
      : SentFrame;

export type AnswerFrame = JoinedFrame | LeftFrame | SentFrame | ListedFrame;

/**
 * Callbacks of one request. They are called synchronously while the answer frame is handled, so
 * what the answer changes (a room becoming joined) is done before the next frame is read.
 */
export interface AnswerHandlers<A extends AnswerFrame> {
  answer(frame: A): void;
  fail(error: RealtimeSocketError): void;
}

const ANSWER_TYPE = { join: 'joined', leave: 'left', send: 'sent', list: 'listed' } as const;

interface Pending {
  expects: AnswerFrame['t'];
  handlers: AnswerHandlers<AnswerFrame>;
}

/** Requests written to the current socket and not yet answered, by `ref`. */
export class Requests {
  #nextRef = 1;
  readonly #pending = new Map<number, Pending>();

  /** Registers a request and returns the `ref` to write it with. */
  open<F extends RequestFrame>(frame: F, handlers: AnswerHandlers<AnswerTo<F>>): number {
    const ref = this.#nextRef++;
    this.#pending.set(ref, { expects: ANSWER_TYPE[frame.t], handlers: handlers as AnswerHandlers<AnswerFrame> });
    return ref;
  }

  /** Hands an answer to its request; false when no request of that kind has its `ref`. */
  answer(frame: AnswerFrame): boolean {
    const pending = this.#pending.get(frame.ref);
    if (!pending || pending.expects !== frame.t) return false;
    this.#pending.delete(frame.ref);
    pending.handlers.answer(frame);
    return true;
  }

  /** Fails the request of `ref`; false when there is none. */
  fail(ref: unknown, error: RealtimeSocketError): boolean {
    if (typeof ref !== 'number') return false;
    const pending = this.#pending.get(ref);
    if (!pending) return false;
    this.#pending.delete(ref);
    pending.handlers.fail(error);
    return true;
  }

  /** Fails every request: their socket is gone. */
  failAll(error: RealtimeSocketError): void {
    const all = [...this.#pending.values()];
    this.#pending.clear();
    for (const pending of all) pending.handlers.fail(error);
  }

  get size(): number {
    return this.#pending.size;
  }
}
