import { ERRORS, type ErrorCode } from '@realtime/protocol';

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

/** Quotes a client-given value for a message: one line, at most 40 characters. */
export function quote(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
