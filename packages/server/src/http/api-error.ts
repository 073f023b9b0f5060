import { ERRORS, type ErrorCode } from '@realtime/protocol';
import type { Checked, Problem } from '../core/problem.js';

/** A refusal the client caused (or, for `internal`, one it did not): code, one-line message, status. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message?: string, headers?: Record<string, string>) {
    super(message ?? ERRORS[code].message);
    this.code = code;
    this.status = ERRORS[code].status;
    this.headers = headers;
  }
}

/** A problem core/ found, answered as HTTP: its code's status and its message, unchanged. */
export function problemError(problem: Problem): ApiError {
  return new ApiError(problem.code, problem.message);
}

/** The checked value, or its problem thrown as the HTTP refusal. */
export function accept<T>(checked: Checked<T>): T {
  if (!checked.ok) throw problemError(checked.problem);
  return checked.value;
}
