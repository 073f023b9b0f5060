import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { LIMITS } from '@realtime/protocol';
import type { Admission } from './admission.js';
import { ApiError, sendError } from './answer.js';

/** Time to receive a whole request, body included (2 MB over a slow link); answering is not counted. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Headers per request; 16 KB of them is the other bound (Node's maxHeaderSize). */
const MAX_HEADERS_COUNT = 100;

/** Options for createServer that bound a silent or slow client: 408 once a timeout passes. */
export function guardedServerOptions(headersTimeoutMs: number): ServerOptions {
  return {
    headersTimeout: headersTimeoutMs,
    requestTimeout: Math.max(REQUEST_TIMEOUT_MS, headersTimeoutMs),
    // Node looks for timed-out requests only this often (30 s by default): keep it well under the timeout.
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
  };
}

/**
 * Counts every connection with the admission from its accept, and tells it when a request starts
 * and ends, so that connections waiting for a request stay within their cap.
 */
export function guardConnections(server: Server, admission: Admission): void {
  server.maxHeadersCount = MAX_HEADERS_COUNT;
  server.on('connection', (socket: Socket) => admission.connected(socket));
  const answered = (req: IncomingMessage, res: ServerResponse) => {
    admission.requestStarted(req.socket);
    res.once('close', () => admission.requestEnded(req.socket));
  };
  // With a checkContinue or checkExpectation listener, Node emits those instead of 'request'.
  for (const event of ['request', 'checkContinue', 'checkExpectation'] as const)
    server.prependListener(event, answered);
  for (const event of ['upgrade', 'connect'] as const) {
    server.prependListener(event, (req: IncomingMessage) => admission.handedOver(req.socket));
  }
}

/**
 * `Expect: 100-continue` with a declared body over the limit: 413 at once, without 100 Continue,
 * so the client never sends the body. Returns whether it answered.
 */
export function refuseLargeContinue(req: IncomingMessage, res: ServerResponse): boolean {
  const declared = Number(req.headers['content-length']);
  if (!(declared > LIMITS.bodyBytes)) return false;
  sendError(res, new ApiError('too_large', `the body is over ${LIMITS.bodyBytes} bytes`, { Connection: 'close' }));
  return true;
}

/** What a client whose request did not arrive in time is told (Node's ERR_HTTP_REQUEST_TIMEOUT). */
export function isRequestTimeout(error: NodeJS.ErrnoException): boolean {
  return error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
}
