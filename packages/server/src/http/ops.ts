import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { API_BASE } from '@realtime/protocol';
import type { Metrics } from '../metrics/metrics.js';
import { sendJson } from './answer.js';

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

function error(res: ServerResponse, status: number, code: string, message: string, head: boolean): void {
  const body = JSON.stringify({ ok: false, error: code, message });
  if (!head) {
    sendJson(res, status, body);
    return;
  }
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end();
}

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
  const head = req.method === 'HEAD';
  if (req.method !== 'GET' && !head) {
    res.setHeader('Allow', 'GET, HEAD');
    error(res, 405, 'bad_method', `${path} takes GET, HEAD, not ${req.method}`, false);
    return true;
  }
  if (path === HEALTH_PATH) {
    answer(res, OK, head);
    return true;
  }
  if (path === READY_PATH) {
    void ready(res, deps, head);
    return true;
  }
  if (deps.metricsToken !== undefined && !tokenMatches(req.headers.authorization, deps.metricsToken)) {
    res.setHeader('WWW-Authenticate', 'Bearer');
    error(res, 401, 'unauthorized', 'metrics need Authorization: Bearer <the configured token>', head);
    return true;
  }
  void deps.metrics.render().then(
    ({ contentType, body }) => {
      res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
      res.end(head ? undefined : body);
    },
    () => error(res, 503, 'unavailable', 'the metrics could not be read', head),
  );
  return true;
}

function answer(res: ServerResponse, body: string, head: boolean): void {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

async function ready(res: ServerResponse, deps: OpsDeps, head: boolean): Promise<void> {
  if (deps.draining()) {
    error(res, 503, 'unavailable', 'the service is stopping', head);
    return;
  }
  try {
    await deps.checkStores();
  } catch (failure) {
    const reason = failure instanceof Error ? failure.message.split('\n')[0]?.slice(0, 120) : 'no answer';
    error(res, 503, 'unavailable', `a store does not answer: ${reason}`, head);
    return;
  }
  answer(res, OK, head);
}
