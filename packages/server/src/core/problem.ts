import type { ErrorCode } from '@realtime/protocol';

/**
 * What is wrong with something a client sent: a code of the wire's catalogue and a one-line message.
 * The edge that took it in decides how to answer (an HTTP status, a frame error).
 */
export interface Problem {
  readonly code: ErrorCode;
  readonly message: string;
}

export interface Accepted<T> {
  readonly ok: true;
  readonly value: T;
}

export interface Refused {
  readonly ok: false;
  readonly problem: Problem;
}

/** A value that passed its checks, or the first problem found with it. */
export type Checked<T> = Accepted<T> | Refused;

export function accepted<T>(value: T): Accepted<T> {
  return { ok: true, value };
}

export function refused(code: ErrorCode, message: string): Refused {
  return { ok: false, problem: { code, message } };
}
