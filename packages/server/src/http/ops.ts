import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_BASE } from '@realtime/protocol';
import type { Metrics } from '../metrics/metrics.js';
import { ApiError, sendError, sendJson } from './answer.js';

export const HEALTH_PATH = `${API_BASE}/health`;
export const READY_PATH = `${API_BASE}/ready`;
export const METRICS_PATH = '/metrics';

export interface OpsDeps {
  metrics: Metrics;
  /** Bearer token /metrics asks for; none: open. */
  metricsToken: string | undefined;
  /** True once a stop began: the node takes no new work. */
  draining(): boolean;
  /** Resolves when the stores answer; throws with the reason when one does not. */
  checkStores(): Promise<void>;
}

const OK = JSON.stringify({ ok: true });

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
function tokenMatches(header: string | undefined, token: string): boolean {
  const given = header?.startsWith('Bearer ') ? header.slice(7) : '';
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * The unsigned operational endpoints: liveness, readiness and Prometheus metrics. They carry no app
 * data. Returns false for any other path, which the signed API then takes.
 */
export function handleOpsRequest(req: IncomingMessage, res: ServerResponse, deps: OpsDeps): boolean {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path !== HEALTH_PATH && path !== READY_PATH && path !== METRICS_PATH) return false;
  // Nothing is read from a body here; drain it so the connection stays usable.
  req.resume();
  // Node leaves the body out of a HEAD answer by itself.
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, new ApiError('bad_method', `${path} takes GET, HEAD, not ${req.method}`, { Allow: 'GET, HEAD' }));
    return true;
  }
  if (path === HEALTH_PATH) {
    sendJson(res, 200, OK);
    return true;
  }
  if (path === READY_PATH) {
    void ready(res, deps);
    return true;
  }
  if (deps.metricsToken !== undefined && !tokenMatches(req.headers.authorization, deps.metricsToken)) {
    const message = 'metrics need Authorization: Bearer <the configured token>';
    sendError(res, new ApiError('unauthorized', message, { 'WWW-Authenticate': 'Bearer' }));
    return true;
  }
  void deps.metrics.render().then(
    ({ contentType, body }) => {
      res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    },
    () => sendError(res, new ApiError('unavailable', 'the metrics could not be read')),
  );
  return true;
}

async function ready(res: ServerResponse, deps: OpsDeps): Promise<void> {
  if (deps.draining()) {
    sendError(res, new ApiError('unavailable', 'the service is stopping'));
    return;
  }
  try {
    await deps.checkStores();
  } catch (failure) {
    const reason = failure instanceof Error ? failure.message.split('\n')[0]?.slice(0, 120) : 'no answer';
    sendError(res, new ApiError('unavailable', `a store does not answer: ${reason}`));
    return;
  }
  sendJson(res, 200, OK);
}
