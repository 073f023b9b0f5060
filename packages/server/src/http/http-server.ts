import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Admission } from './admission.js';
import { guardConnections, guardedServerOptions, isRequestTimeout, refuseLargeContinue } from './guards.js';

export interface HttpServerHandlers {
  admission: Admission;
  /** Every request a handler answers: ops, dashboard, API. */
  onRequest(req: IncomingMessage, res: ServerResponse): void;
  /** An upgrade within the page caps: the gateway's. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** A whole HTTP answer for a socket no handler owns; no body for HEAD. */
function rawAnswer(status: number, reason: string, code: string, message: string, head: boolean): string {
  const body = JSON.stringify({ ok: false, error: code, message });
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`;
}

/**
 * The server of the API and the pages (not yet listening), with the connection guards, and answers
 * in the API's JSON shape for what no handler owns: upgrades over a cap, `Expect`, malformed HTTP,
 * CONNECT.
 */
export function createHttpServer({ admission, onRequest, upgrade }: HttpServerHandlers): Server {
  const server: Server = createServer(
    { keepAliveTimeout: 30_000, requireHostHeader: false, ...guardedServerOptions(admission.limits.headersTimeoutMs) },
    onRequest,
  );
  guardConnections(server, admission);
  server.on('upgrade', (req, socket, head) => {
    // Refused before the WebSocket is accepted: a page over a cap never costs a page.
    const refused = admission.admitPage(req, socket);
    if (refused === undefined) return upgrade(req, socket, head);
    socket.on('error', () => socket.destroy());
    socket.end(rawAnswer(503, 'Service Unavailable', 'unavailable', refused, false));
  });
  // Without this listener Node would send 100 Continue for any body, even one it will refuse.
  server.on('checkContinue', (req, res) => {
    if (refuseLargeContinue(req, res)) return;
    res.writeContinue();
    onRequest(req, res);
  });
  // An Expect other than 100-continue would get Node's bare 417; take the request as any other.
  server.on('checkExpectation', onRequest);
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket) => {
    // Malformed HTTP never reaches a handler: answer in the same JSON shape when the socket still can.
    if (!socket.writable || socket.writableEnded) {
      socket.destroy();
      return;
    }
    const head = error.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    if (isRequestTimeout(error)) {
      socket.end(rawAnswer(408, 'Request Timeout', 'request_timeout', 'the request did not arrive in time', head));
      return;
    }
    const message =
      error.code === 'HPE_HEADER_OVERFLOW' ? 'the request headers are over 16 KB' : 'the request is not valid HTTP';
    socket.end(rawAnswer(400, 'Bad Request', 'bad_request', message, head));
  });
  // CONNECT is no method of this API; without a listener Node would drop the connection unanswered.
  server.on('connect', (_req, socket: Duplex) => {
    socket.end(rawAnswer(405, 'Method Not Allowed', 'bad_method', 'this service takes no CONNECT', false));
  });
  return server;
}
