import type { ServerResponse } from 'node:http';
import { ERRORS } from '@realtime/protocol';
import { ApiError } from './api-error.js';

/** Writes a JSON answer; the body is already encoded. */
export function sendJson(res: ServerResponse, status: number, body: string, headers?: Record<string, string>): void {
  if (res.headersSent) return;
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

export function sendError(res: ServerResponse, error: ApiError): void {
  // One line, whatever a quoted client value held: every C0/C1 control and the Unicode line separators.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point.
  const message = error.message.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ');
  sendJson(res, error.status, JSON.stringify({ ok: false, error: error.code, message }), error.headers);
}

export function internalError(): ApiError {
  return new ApiError('internal', ERRORS.internal.message);
}

export { ApiError };
